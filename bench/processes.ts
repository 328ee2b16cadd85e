// Child processes of the benchmark: each server and each load run is its own Node process.
// Every child is tracked here so that stopAll() can end them on success, error or Ctrl-C.
import { type ChildProcess, spawn } from "node:child_process";
import { createInterface } from "node:readline";

/** Keeps the last lines a child wrote besides its JSON answer (its logs, its errors). */
const LOG_TAIL = 50;

export interface ServerProcess {
  name: string;
  pid: number;
  /** the JSON line the server printed once it was listening */
  info: Record<string, unknown>;
  /** how many lines it wrote after that, and the last few of them */
  logs: { count: number; tail: string[] };
}

const running = new Set<ChildProcess>();
/** Set once stopAll() began: a server exiting after that was asked to. */
let stopping = false;
/** Servers that exited while the bench still needed them, each with its last lines. */
const lost: string[] = [];

/**
 * What the servers that exited on their own said last: a measured process that is gone shows
 * only as its /proc entry missing, which names no one.
 */
export function lostServers(): string[] {
  return [...lost];
}

function isRunning(child: ChildProcess): boolean {
  return child.exitCode === null && child.signalCode === null;
}

/** Starts a command as a tracked child: stopAll() and killAllNow() end it with the others. */
export function spawnTracked(
  command: string,
  args: string[],
  env: NodeJS.ProcessEnv = process.env,
): ChildProcess {
  const child = spawn(command, args, { env, stdio: ["ignore", "pipe", "pipe"] });
  running.add(child);
  child.once("exit", () => running.delete(child));
  return child;
}

function spawnNode(nodeArgs: string[], env: NodeJS.ProcessEnv): ChildProcess {
  return spawnTracked(process.execPath, nodeArgs, env);
}

function collectLines(child: ChildProcess, onFirstJson: (line: string) => void): ServerProcess["logs"] {
  const logs = { count: 0, tail: [] as string[] };
  let answered = false;
  const keep = (line: string) => {
    logs.count++;
    logs.tail.push(line);
    if (logs.tail.length > LOG_TAIL) logs.tail.shift();
  };
  createInterface({ input: child.stdout! }).on("line", (line) => {
    if (!answered && line.startsWith("{")) {
      answered = true;
      onFirstJson(line);
    } else keep(line);
  });
  createInterface({ input: child.stderr! }).on("line", keep);
  return logs;
}

/**
 * Starts a server process and waits (bounded) for the JSON line it prints once listening.
 * Rejects with its last output if it exits or stays silent first.
 */
export function startServer(
  name: string,
  nodeArgs: string[],
  env: NodeJS.ProcessEnv,
  timeoutMs = 15_000,
): Promise<ServerProcess> {
  const child = spawnNode(nodeArgs, env);
  return new Promise((resolve, reject) => {
    const timer = setTimeout(() => fail("did not report its URL in time"), timeoutMs);
    const fail = (why: string) => {
      clearTimeout(timer);
      reject(new Error(`${name} ${why}\n${logs.tail.join("\n")}`));
    };
    const logs = collectLines(child, (line) => {
      clearTimeout(timer);
      let info: Record<string, unknown>;
      try {
        info = JSON.parse(line) as Record<string, unknown>;
      } catch {
        return fail(`printed a line that is not JSON: ${line}`);
      }
      // `--json` commands report a failure as {"error": {...}} instead of their answer.
      if (info.error) return fail(`failed to start: ${JSON.stringify(info.error)}`);
      ready = true;
      resolve({ name, pid: child.pid!, info, logs });
    });
    let ready = false;
    child.once("exit", (code, signal) => {
      if (!ready) fail(`exited (${signal ?? code}) before it was ready`);
      else if (!stopping)
        lost.push(`${name} (pid ${child.pid}) exited (${signal ?? code}):\n${logs.tail.join("\n")}`);
    });
    child.once("error", (err) => fail(`could not start: ${err.message}`));
  });
}

/** Runs a process to its end (killed after timeoutMs) and returns its last stdout line. */
export function runToEnd(name: string, nodeArgs: string[], timeoutMs: number): Promise<string> {
  const child = spawnNode(nodeArgs, process.env);
  let stdout = "";
  let stderr = "";
  child.stdout!.on("data", (chunk: Buffer) => {
    stdout += chunk.toString();
  });
  child.stderr!.on("data", (chunk: Buffer) => {
    stderr += chunk.toString();
  });
  return new Promise((resolve, reject) => {
    const timer = setTimeout(() => child.kill("SIGKILL"), timeoutMs);
    child.once("error", reject);
    child.once("exit", (code, signal) => {
      clearTimeout(timer);
      const last = stdout.trim().split("\n").pop() ?? "";
      if (code === 0 && last) resolve(last);
      else reject(new Error(`${name} failed (${signal ?? `exit ${code}`})\n${stderr.trim()}`));
    });
  });
}

export function waitForExit(child: ChildProcess, ms: number): Promise<boolean> {
  if (!isRunning(child)) return Promise.resolve(true);
  return new Promise((resolve) => {
    const timer = setTimeout(() => resolve(false), ms);
    child.once("exit", () => {
      clearTimeout(timer);
      resolve(true);
    });
  });
}

/** Asks one child to stop (SIGTERM), and kills it if it has not exited within graceMs. */
async function stop(child: ChildProcess, graceMs: number): Promise<void> {
  if (!isRunning(child)) return;
  child.kill("SIGTERM");
  if (!(await waitForExit(child, graceMs))) {
    child.kill("SIGKILL");
    await waitForExit(child, 1_000);
  }
}

/** Stops every child still running, each by its own pid. */
export async function stopAll(graceMs = 5_000): Promise<void> {
  stopping = true;
  await Promise.all([...running].map((child) => stop(child, graceMs)));
}

/** Stops the children synchronously, for the last moment of a process that is exiting anyway. */
export function killAllNow(): void {
  for (const child of running) if (isRunning(child)) child.kill("SIGKILL");
}
