// The shell: who is signed in, the navigation, and which page the path shows.
import { type ReactNode, useCallback, useEffect, useMemo, useRef, useState } from "react";
import { ApiError, api, setActingAccount, setUnauthenticatedHandler } from "./api.ts";
import { ErrorNotice, Loading } from "./components/Notice.tsx";
import { AdminPage } from "./pages/Admin.tsx";
import { KeysPage } from "./pages/Keys.tsx";
import { LoginPage } from "./pages/Login.tsx";
import { ModelsPage } from "./pages/Models.tsx";
import { NotFoundPage } from "./pages/NotFound.tsx";
import { OPERATIONS_TABS, OperationsPage } from "./pages/Operations.tsx";
import { OverviewPage } from "./pages/Overview.tsx";
import { PlanPage } from "./pages/Plan.tsx";
import { RecordsPage } from "./pages/Records.tsx";
import { SessionPage, SessionsPage } from "./pages/Sessions.tsx";
import { NewTicketPage, TicketPage } from "./pages/Ticket.tsx";
import { TicketsPage } from "./pages/Tickets.tsx";
import { Link, match, navigate, useLocation } from "./router.tsx";
import { type Session, SessionContext } from "./session.tsx";
import type { AccountView, MeAnswer } from "./types.ts";

interface Route {
  title: string;
  page: ReactNode;
  /** which navigation entry is current */
  section: string;
}

function route(path: string, session: Session): Route {
  if (path === "/" || path === "/overview")
    return { title: "Overview", page: <OverviewPage />, section: "/" };
  if (path === "/keys") return { title: "Keys", page: <KeysPage />, section: "/keys" };
  if (path === "/records") return { title: "Call records", page: <RecordsPage />, section: "/records" };
  if (path === "/sessions") return { title: "Sessions", page: <SessionsPage />, section: "/sessions" };
  const agentSession = match("/sessions/:id", path);
  if (agentSession)
    return {
      title: "Session",
      page: <SessionPage key={agentSession.id} id={agentSession.id!} />,
      section: "/sessions",
    };
  if (path === "/models") return { title: "Models", page: <ModelsPage />, section: "/models" };
  if (path === "/tickets") return { title: "Tickets", page: <TicketsPage />, section: "/tickets" };
  if (path === "/tickets/new") return { title: "New ticket", page: <NewTicketPage />, section: "/tickets" };
  const ticket = match("/tickets/:id", path);
  if (ticket)
    return { title: "Ticket", page: <TicketPage key={ticket.id} id={ticket.id!} />, section: "/tickets" };
  if (path === "/plan") return { title: "Plan", page: <PlanPage />, section: "/plan" };
  const admin = match("/admin", path) ?? match("/admin/:tab", path);
  if (admin && session.isAdmin)
    return { title: "Administration", page: <AdminPage tab={admin.tab ?? "accounts"} />, section: "/admin" };
  const provider = match("/operations/providers/:id", path);
  if (provider && session.isAdmin)
    return {
      title: `Provider ${provider.id}`,
      page: <OperationsPage tab="providers" provider={provider.id!} />,
      section: "/operations",
    };
  const operations = match("/operations", path) ?? match("/operations/:tab", path);
  if (operations && session.isAdmin) {
    const tab = operations.tab ?? "dashboard";
    const label = OPERATIONS_TABS.find((t) => t.id === tab)?.label ?? "Operations";
    return { title: label, page: <OperationsPage tab={tab} />, section: "/operations" };
  }
  return { title: "Not found", page: <NotFoundPage />, section: "" };
}

const NAV: { to: string; label: string; admin?: boolean }[] = [
  { to: "/", label: "Overview" },
  { to: "/keys", label: "Keys" },
  { to: "/records", label: "Call records" },
  { to: "/sessions", label: "Sessions" },
  { to: "/models", label: "Models" },
  { to: "/tickets", label: "Tickets" },
  { to: "/plan", label: "Plan" },
  { to: "/admin", label: "Administration", admin: true },
  { to: "/operations", label: "Operations", admin: true },
];

export function App() {
  /** undefined while the first /me is on its way; null: signed out */
  const [me, setMe] = useState<MeAnswer | null | undefined>(undefined);
  const [loadError, setLoadError] = useState<unknown>(null);
  const [expired, setExpired] = useState(false);
  const [acting, setActing] = useState<AccountView | null>(null);
  const location = useLocation();

  const refresh = useCallback(async () => {
    try {
      setMe(await api<MeAnswer>("/me"));
      setLoadError(null);
    } catch (err) {
      if (err instanceof ApiError && err.status === 401) setMe(null);
      else setLoadError(err);
    }
  }, []);

  const actAs = useCallback((account: AccountView | null) => {
    setActingAccount(account?.id ?? null);
    setActing(account);
  }, []);

  useEffect(() => {
    setUnauthenticatedHandler(() => {
      setMe((current) => {
        if (current) setExpired(true);
        return null;
      });
      actAs(null);
    });
    void refresh();
    return () => setUnauthenticatedHandler(null);
  }, [refresh, actAs]);

  const logout = useCallback(async () => {
    try {
      await api("/logout", { method: "POST" });
    } finally {
      actAs(null);
      setExpired(false);
      setMe(null);
      navigate("/login", { replace: true });
    }
  }, [actAs]);

  const session = useMemo<Session | null>(() => {
    if (!me) return null;
    const isAdmin = me.user.role === "admin";
    return {
      me,
      acting,
      account: acting ?? me.account,
      isAdmin,
      canManage: isAdmin || me.user.role === "owner",
      refresh,
      logout,
      actAs,
    };
  }, [me, acting, refresh, logout, actAs]);

  useEffect(() => {
    if (me && location.path === "/login") {
      const next = location.query.get("next");
      navigate(next?.startsWith("/") && !next.startsWith("//") ? next : "/", { replace: true });
    }
  }, [me, location]);

  if (me === undefined)
    return (
      <main className="center-page">
        {loadError ? (
          <ErrorNotice error={loadError} onRetry={refresh} />
        ) : (
          <Loading what="Opening the console" />
        )}
      </main>
    );
  if (me === null || !session)
    return (
      <LoginPage
        expired={expired}
        onSignedIn={async () => {
          setExpired(false);
          await refresh();
        }}
      />
    );
  if (location.path === "/login") return <Loading />;
  return (
    <SessionContext.Provider value={session}>
      <Shell session={session} />
    </SessionContext.Provider>
  );
}

function Shell({ session }: { session: Session }) {
  const location = useLocation();
  const current = route(location.path, session);
  const [menuOpen, setMenuOpen] = useState(false);
  const first = useRef(true);

  // a new page: close the narrow-screen menu, name the tab, and move focus to the page title
  // so keyboard and screen reader users start at the top of what changed
  // biome-ignore lint/correctness/useExhaustiveDependencies: runs on path changes only
  useEffect(() => {
    setMenuOpen(false);
    document.title = `${current.title} · Console`;
    if (first.current) {
      first.current = false;
      return;
    }
    document.getElementById("page-title")?.focus();
  }, [location.path]);

  const { me, account, acting } = session;
  return (
    <div className="layout">
      <a className="skip-link" href="#main">
        Skip to content
      </a>
      <header className="topbar">
        <Link to="/" className="brand">
          <span className="brand-mark" aria-hidden="true" />
          Gateway console
        </Link>
        <button
          type="button"
          className="btn menu-button"
          aria-expanded={menuOpen}
          aria-controls="nav"
          onClick={() => setMenuOpen((o) => !o)}
        >
          {menuOpen ? "Close menu" : "Menu"}
        </button>
        <div className="whoami">
          <span className="whoami-account" title={account.id}>
            {account.name}
          </span>
          <span className="muted whoami-user">
            {me.user.email} · {me.user.role}
          </span>
          <button type="button" className="btn btn-small" onClick={() => void session.logout()}>
            Sign out
          </button>
        </div>
      </header>
      <nav id="nav" className={menuOpen ? "nav nav-open" : "nav"} aria-label="Console">
        <ul>
          {NAV.filter((item) => !item.admin || session.isAdmin).map((item) => (
            <li key={item.to}>
              <Link to={item.to} aria-current={current.section === item.to ? "page" : undefined}>
                {item.label}
              </Link>
            </li>
          ))}
        </ul>
      </nav>
      <main id="main" className="main">
        {acting && (
          <div className="notice notice-info acting">
            <p>
              You are looking at account <strong>{acting.name}</strong> ({acting.id}) as an administrator.
            </p>
            <button type="button" className="btn btn-small" onClick={() => session.actAs(null)}>
              Back to my account
            </button>
          </div>
        )}
        {current.page}
      </main>
    </div>
  );
}
