import { PageHeader } from "../components/PageHeader.tsx";
import { Link } from "../router.tsx";
import { AuditTab } from "./ops/AuditTab.tsx";
import { DashboardTab } from "./ops/DashboardTab.tsx";
import { ModelsTab } from "./ops/ModelsTab.tsx";
import { PlansTab } from "./ops/PlansTab.tsx";
import { ProviderPage } from "./ops/ProviderPage.tsx";
import { ProvidersTab } from "./ops/ProvidersTab.tsx";
import { RecordsTab } from "./ops/RecordsTab.tsx";
import { TokensTab } from "./ops/TokensTab.tsx";

export const OPERATIONS_TABS = [
  { id: "dashboard", label: "Dashboard" },
  { id: "providers", label: "Providers" },
  { id: "models", label: "Models" },
  { id: "plans", label: "Plans" },
  { id: "records", label: "Records" },
  { id: "audit", label: "Audit log" },
  { id: "tokens", label: "Admin tokens" },
] as const;

/**
 * The gateway as a whole, for admins, through the admin API (/admin/v1): its traffic, its
 * catalog, every account's records, who changed what, and the admin API's tokens. Accounts,
 * keys, users and tickets stay under Administration.
 */
export function OperationsPage({ tab, provider }: { tab: string; provider?: string }) {
  const current = OPERATIONS_TABS.find((t) => t.id === tab)?.id ?? "dashboard";
  return (
    <>
      <PageHeader title="Operations">
        <p>
          The whole gateway: its traffic, its providers, models and plans, every account's calls, and every
          change.
        </p>
      </PageHeader>
      <nav className="subnav" aria-label="Operations">
        <ul>
          {OPERATIONS_TABS.map((t) => (
            <li key={t.id}>
              <Link
                to={`/operations/${t.id}`}
                aria-current={t.id === current ? (provider ? "true" : "page") : undefined}
              >
                {t.label}
              </Link>
            </li>
          ))}
        </ul>
      </nav>
      {provider !== undefined ? (
        <ProviderPage key={provider} id={provider} />
      ) : (
        <>
          {current === "dashboard" && <DashboardTab />}
          {current === "providers" && <ProvidersTab />}
          {current === "models" && <ModelsTab />}
          {current === "plans" && <PlansTab />}
          {current === "records" && <RecordsTab />}
          {current === "audit" && <AuditTab />}
          {current === "tokens" && <TokensTab />}
        </>
      )}
    </>
  );
}
