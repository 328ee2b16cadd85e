// Runs the CLI as operators do: `node src/main.ts …` in a child process, with only the
// environment a test gives it, and what it printed.
import { spawn } from "node:child_process";
import { fileURLToPath } from "node:url";

const MAIN = fileURLToPath(new URL("../../src/main.ts", import.meta.url));

/** Variables the CLI reads; children get only the ones a test sets. */
const CLI_VARS = [
  "GATEWAY_CONFIG",
  "DATABASE_URL",
  "REDIS_URL",
  "GATEWAY_DATA_DIR",
  "PORT",
  "HOST",
  "LOG_LEVEL",
];

export interface CliResult {
  code: number | null;
  stdout: string;
  stderr: string;
  /** stdout parsed as one JSON document (undefined when it is not one) */
  json: any;
}

/**
 * Runs the CLI in `cwd` (a scratch folder, so nothing lands in the repository, e.g. a default
 * ./data); `stdin` is written to it and closed (an empty string: closed at once).
 */
export function runCli(
  args: string[],
  env: Record<string, string | undefined>,
  options: { cwd: string; stdin?: string },
): Promise<CliResult> {
  const childEnv: Record<string, string | undefined> = { ...process.env };
  for (const name of [...CLI_VARS, "NODE_TEST_CONTEXT", "NODE_OPTIONS"]) delete childEnv[name];
  Object.assign(childEnv, env);
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, [MAIN, ...args], { env: childEnv, cwd: options.cwd });
    let stdout = "";
    let stderr = "";
    child.stdout.setEncoding("utf8").on("data", (d: string) => {
      stdout += d;
    });
    child.stderr.setEncoding("utf8").on("data", (d: string) => {
      stderr += d;
    });
    child.on("error", reject);
    child.on("close", (code) => {
      let json: any;
      try {
        json = JSON.parse(stdout);
      } catch {
        json = undefined;
      }
      resolve({ code, stdout, stderr, json });
    });
    child.stdin.end(options.stdin ?? "");
  });
}
