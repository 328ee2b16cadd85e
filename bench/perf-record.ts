// `--perf`: records the bench's servers with Linux perf while they are measured, one recording
// per target, read afterwards with bench/perf-summary.ts. perf samples a thread only while it
// runs on a core (CPU time), where V8's profiles (--profile) sample wall time.
import { spawnSync } from "node:child_process";
import { join } from "node:path";
import { spawnTracked, waitForExit } from "./processes.ts";

/** Samples per second and thread: enough for a share of 1 % over a minute's run, little overhead. */
const FREQUENCY = 499;

export interface PerfRecording {
  file: string;
  /** Ends the recording; perf writes its file on SIGINT. */
  stop(): Promise<void>;
}

/** Throws with what to do when perf cannot record here. */
export function checkPerf(): void {
  const probe = spawnSync("perf", ["--version"], { encoding: "utf8" });
  if (probe.error || probe.status !== 0)
    throw new Error("--perf needs Linux perf on the PATH (Debian: apt-get install linux-perf)");
}

/** perf refuses a recording it may not make (permissions, a pid gone) at once, or not at all. */
const STARTED_MS = 1_000;

/** Starts recording the processes `pids` (with their call stacks) into DIR/NAME.data. */
export async function recordPerf(dir: string, name: string, pids: readonly number[]): Promise<PerfRecording> {
  const file = join(dir, `${name}.data`);
  const child = spawnTracked("perf", [
    "record",
    "-g",
    "-F",
    String(FREQUENCY),
    "-o",
    file,
    "-p",
    pids.join(","),
  ]);
  let stderr = "";
  child.stdout!.resume();
  child.stderr!.on("data", (chunk: Buffer) => {
    stderr += chunk.toString();
  });
  // Found out now rather than after the whole bench has run.
  if (await waitForExit(child, STARTED_MS))
    throw new Error(`perf could not record ${name}: ${stderr.trim() || `exit ${child.exitCode}`}`);
  return {
    file,
    async stop() {
      child.kill("SIGINT");
      if (!(await waitForExit(child, 30_000))) throw new Error(`perf did not finish ${file}`);
      if (child.exitCode !== 0 && child.signalCode !== "SIGINT")
        throw new Error(`perf could not record ${name}: ${stderr.trim()}`);
    },
  };
}
