import { PageHeader } from "../components/PageHeader.tsx";
import { Link } from "../router.tsx";

export function NotFoundPage() {
  return (
    <>
      <PageHeader title="Page not found" />
      <p>
        There is no console page at this address. <Link to="/">Go to the overview</Link>.
      </p>
    </>
  );
}
