import { useApi } from "../api.ts";
import { DataTable, listRows } from "../components/DataTable.tsx";
import { Empty } from "../components/Notice.tsx";
import { PageHeader } from "../components/PageHeader.tsx";
import { Link } from "../router.tsx";
import { useSession } from "../session.tsx";
import type { List, ModelView } from "../types.ts";

export function ModelsPage() {
  const { account } = useSession();
  const models = useApi<List<ModelView>>("/models");
  return (
    <>
      <PageHeader title="Models">
        <p>
          The models your plan (<strong>{account.plan_id}</strong>) lets you call. Use the id as{" "}
          <code>model</code> in <code>/v1/chat/completions</code>. Need another one?{" "}
          <Link to="/plan">See the plans</Link>.
        </p>
      </PageHeader>
      <DataTable
        {...listRows(models)}
        loading="Loading the models"
        empty={
          <Empty title="Your plan includes no models yet.">Ask for a plan upgrade from the Plan page.</Empty>
        }
        boxClassName="card"
        caption="Models your account may call"
        rowKey={(m) => m.id}
        columns={[
          { header: "Model id", cell: (m) => <code>{m.id}</code> },
          { header: "Owned by", cell: (m) => m.owned_by ?? <span className="muted">–</span> },
        ]}
      />
    </>
  );
}
