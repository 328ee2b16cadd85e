import { PageHeader } from "../components/PageHeader.tsx";
import { Link } from "../router.tsx";
import { AccountsTab } from "./admin/AccountsTab.tsx";
import { KeysTab } from "./admin/KeysTab.tsx";
import { TicketsTab } from "./admin/TicketsTab.tsx";
import { UsersTab } from "./admin/UsersTab.tsx";

const TABS = [
  { id: "accounts", label: "Accounts" },
  { id: "keys", label: "Keys" },
  { id: "users", label: "Users" },
  { id: "tickets", label: "All tickets" },
];

export function AdminPage({ tab }: { tab: string }) {
  const current = TABS.some((t) => t.id === tab) ? tab : "accounts";
  return (
    <>
      <PageHeader title="Administration">
        <p>Every account, key, user and ticket of this gateway.</p>
      </PageHeader>
      <nav className="subnav" aria-label="Administration">
        <ul>
          {TABS.map((t) => (
            <li key={t.id}>
              <Link to={`/admin/${t.id}`} aria-current={t.id === current ? "page" : undefined}>
                {t.label}
              </Link>
            </li>
          ))}
        </ul>
      </nav>
      {current === "accounts" && <AccountsTab />}
      {current === "keys" && <KeysTab />}
      {current === "users" && <UsersTab />}
      {current === "tickets" && <TicketsTab />}
    </>
  );
}
