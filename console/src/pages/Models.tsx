import { useApi } from "../api.ts";
import { Empty, ErrorNotice, Loading } from "../components/Notice.tsx";
import { PageHeader } from "../components/PageHeader.tsx";
import { Link } from "../router.tsx";
import { useSession } from "../session.tsx";
import type { Model } from "../types.ts";

export function ModelsPage() {
  const { account } = useSession();
  const models = useApi<{ data: Model[] }>("/models");
  return (
    <>
      <PageHeader title="Models">
        <p>
          The models your plan (<strong>{account.plan_id}</strong>) lets you call. Use the id as{" "}
          <code>model</code> in <code>/v1/chat/completions</code>. Need another one?{" "}
          <Link to="/plan">See the plans</Link>.
        </p>
      </PageHeader>
      {models.error ? (
        <ErrorNotice error={models.error} onRetry={models.reload} />
      ) : !models.data ? (
        <Loading what="Loading the models" />
      ) : models.data.data.length === 0 ? (
        <Empty title="Your plan includes no models yet.">Ask for a plan upgrade from the Plan page.</Empty>
      ) : (
        <div className="table-wrap card">
          <table>
            <caption className="sr-only">Models your account may call</caption>
            <thead>
              <tr>
                <th scope="col">Model id</th>
                <th scope="col">Owned by</th>
              </tr>
            </thead>
            <tbody>
              {models.data.data.map((m) => (
                <tr key={m.id}>
                  <td>
                    <code>{m.id}</code>
                  </td>
                  <td>{m.owned_by ?? <span className="muted">–</span>}</td>
                </tr>
              ))}
            </tbody>
          </table>
        </div>
      )}
    </>
  );
}
