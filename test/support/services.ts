// Suites that need a service the README names (PostgreSQL, Redis) say so in one line and do
// not run where it is not reachable, so a developer without it still gets the rest. Under
// CI=true they run anyway and fail: CI never passes without the service.

export interface SuiteOptions {
  skip?: string;
}

/** describe() options for a suite needing `service`, reachable or not at `where`. */
export function suiteNeeding(
  service: string,
  where: string,
  reachable: boolean,
  env: Record<string, string | undefined> = process.env,
): SuiteOptions {
  if (reachable || env.CI === "true") return {};
  return { skip: `${service} is not reachable at ${where}: not run (with CI=true it fails instead)` };
}
