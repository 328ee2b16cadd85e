// The gateway as an operator runs it: `node src/main.ts serve` in a child process, configured
// by the environment (GATEWAY_CONFIG, GATEWAY_DATA_DIR, …), its JSON log lines on stdout; the
// test sends it signals and reads what it logged.
import { type ChildProcess, spawn } from "node:child_process";
import { readFileSync } from "node:fs";
import { join } from "node:path";

const MAIN = join(import.meta.dirname, "..", "..", "src", "main.ts");

export interface Running {
  child: ChildProcess;
  /** everything it wrote to stdout so far: its log lines (with --json: only serve's answer) */
  stdout: string;
  /** everything it wrote to stderr so far (with --json: its log lines) */
  stderr: string;
  /** e.g. http://127.0.0.1:41234 */
  url: string;
  /** resolves with the exit code */
  exit: Promise<number | null>;
}

/**
 * Starts `node src/main.ts serve` and waits for the line that says where it listens. `env` adds
 * to this process's environment; with `inherit: false` it is the whole environment.
 */
export async function serve(
  env: Record<string, string>,
  args: string[] = [],
  options: { cwd?: string; inherit?: boolean } = {},
): Promise<Running> {
  const child = spawn(process.execPath, [MAIN, "serve", ...args], {
    ...(options.cwd ? { cwd: options.cwd } : {}),
    env: { ...(options.inherit === false ? {} : process.env), PORT: "0", LOG_LEVEL: "info", ...env },
    stdio: ["ignore", "pipe", "pipe"],
  });
  const exit = new Promise<number | null>((resolve) => child.once("exit", (code) => resolve(code)));
  const running: Running = { child, stdout: "", stderr: "", url: "", exit };
  await new Promise<void>((resolve, reject) => {
    const timer = setTimeout(
      () => reject(new Error(`no listening line; output:\n${running.stdout}`)),
      15_000,
    );
    const look = () => {
      const m = running.stdout.match(/"url":"(http:\/\/[^"]+?)(\/v1)?"/);
      if (m && (running.stdout + running.stderr).includes("gateway listening")) {
        running.url = m[1]!;
        clearTimeout(timer);
        resolve();
      }
    };
    child.stdout!.on("data", (chunk: Buffer) => {
      running.stdout += chunk.toString();
      look();
    });
    child.stderr!.on("data", (chunk: Buffer) => {
      running.stderr += chunk.toString();
      look();
    });
    child.once("exit", () => reject(new Error(`exited early:\n${running.stdout}`)));
  });
  return running;
}

/**
 * The first stdout line matching `pattern` from offset `from` of stdout on (0: its start), once
 * it has been written.
 */
export function stdoutLine(running: Running, pattern: RegExp, from = 0): Promise<string> {
  return new Promise((resolve, reject) => {
    const look = () => {
      const line = running.stdout
        .slice(from)
        .split("\n")
        .find((l) => pattern.test(l));
      if (line === undefined) return false;
      running.child.stdout!.off("data", look);
      clearTimeout(timer);
      resolve(line);
      return true;
    };
    const timer = setTimeout(
      () => reject(new Error(`no line matching ${pattern}:\n${running.stdout.slice(from)}`)),
      15_000,
    );
    if (!look()) running.child.stdout!.on("data", look);
  });
}

/** The first start's key, from the file the logged line names (stdout is not a terminal here). */
export async function firstKey(running: Running): Promise<string> {
  const logged = await stdoutLine(running, /^\{.*"msg":"first start/);
  const file = JSON.parse(logged).file as string;
  return readFileSync(file, "utf8").match(/sk-[A-Za-z0-9]{43}/)![0];
}

/** Asks it to stop (SIGTERM) and waits until it has exited. */
export async function stop(running: Running): Promise<void> {
  if (running.child.exitCode === null && running.child.signalCode === null) running.child.kill("SIGTERM");
  await running.exit;
}
