// What the first start on an empty store shows once: the API key it created, a curl command
// using it, and the console admin's password. stdout is also the JSON log stream, which log
// collection keeps, so the secrets go to the terminal only when stdout is one; otherwise to a
// file only the owner may read, whose path is logged.
import { mkdirSync, rmSync, writeFileSync } from "node:fs";
import { resolve } from "node:path";
import type { Gateway } from "../server.ts";

/** In the store's data folder; the operator deletes it once the secrets are stored elsewhere. */
export const SECRETS_FILE = "first-start-secrets.txt";

export function firstStartText(
  gateway: Gateway,
  key: NonNullable<Gateway["firstKey"]>,
  model: string,
): string {
  const base = `${gateway.url}/v1`;
  return [
    "",
    `First start: created account "${key.account}" with this API key (shown once, store it now):`,
    "",
    `  ${key.secret}`,
    "",
    "Try it:",
    "",
    `  curl ${base}/chat/completions \\`,
    `    -H "Authorization: Bearer ${key.secret}" \\`,
    `    -H "Content-Type: application/json" \\`,
    `    -d '{"model":"${model}","messages":[{"role":"user","content":"Hello!"}]}'`,
    "",
    ...(gateway.firstAdmin
      ? [
          `The web console is at ${gateway.url}/console. Log in as (shown once, store it now):`,
          "",
          `  e-mail:   ${gateway.firstAdmin.email}`,
          `  password: ${gateway.firstAdmin.password}`,
          "",
        ]
      : []),
  ].join("\n");
}

/** Writes `text` to <dir>/first-start-secrets.txt, readable by its owner only; its absolute path. */
export function writeSecretsFile(dir: string, text: string): string {
  mkdirSync(dir, { recursive: true, mode: 0o700 });
  const path = resolve(dir, SECRETS_FILE);
  // removed and created exclusively: a file or link left in its place is never written through
  rmSync(path, { force: true });
  writeFileSync(path, `${text}\n`, { mode: 0o600, flag: "wx" });
  return path;
}
