// CPU time and memory of other processes, read from Linux's /proc. The servers are measured
// from outside, so the gateway needs no benchmark hooks and the numbers include every thread
// (libuv pool, GC helpers), not only the JavaScript one.
import { execFileSync } from "node:child_process";
import { readdirSync, readFileSync } from "node:fs";

/** Clock ticks per second of /proc/<pid>/stat's times (almost always 100). */
export const CLOCK_TICKS: number = (() => {
  try {
    const ticks = Number(execFileSync("getconf", ["CLK_TCK"], { encoding: "utf8" }).trim());
    return Number.isFinite(ticks) && ticks > 0 ? ticks : 100;
  } catch {
    return 100;
  }
})();

/** User + system CPU time of the whole process so far, in microseconds. */
export function cpuMicros(pid: number): number {
  const stat = readFileSync(`/proc/${pid}/stat`, "utf8");
  // The command name (field 2) is in parentheses and may hold spaces: count fields after it.
  const fields = stat.slice(stat.lastIndexOf(")") + 2).split(" ");
  // Fields 14 (utime) and 15 (stime) of proc(5); field 3 (state) is index 0 here.
  const ticks = Number(fields[11]) + Number(fields[12]);
  return (ticks * 1e6) / CLOCK_TICKS;
}

/**
 * CPU time so far of the PostgreSQL backends serving `database`, by pid: PostgreSQL titles
 * each backend "postgres: … <user> <database> <client> <state>".
 */
export function backendsCpu(database: string | undefined): Map<number, number> {
  const cpu = new Map<number, number>();
  if (!database) return cpu;
  for (const entry of readdirSync("/proc")) {
    if (!/^\d+$/.test(entry)) continue;
    try {
      const title = readFileSync(`/proc/${entry}/cmdline`, "utf8");
      if (title.startsWith("postgres:") && title.includes(` ${database} `))
        cpu.set(Number(entry), cpuMicros(Number(entry)));
    } catch {
      // the process ended while we looked
    }
  }
  return cpu;
}

/** CPU the backends spent between two readings; one started in between spent all of its own. */
export function backendsSpent(before: Map<number, number>, after: Map<number, number>): number {
  let micros = 0;
  for (const [pid, cpu] of after) micros += cpu - (before.get(pid) ?? 0);
  return micros;
}

/**
 * CPU time the whole machine spent busy so far (all cores; idle and iowait excluded), in
 * microseconds. Compared with the benchmark's own processes it shows other load on the machine.
 */
export function machineCpuMicros(): number {
  const line = readFileSync("/proc/stat", "utf8").split("\n", 1)[0]!;
  // cpu  user nice system idle iowait irq softirq steal …
  const [user, nice, system, , , irq, softirq, steal] = line.split(/\s+/).slice(1).map(Number);
  const ticks = [user, nice, system, irq, softirq, steal].reduce((a: number, b) => a + (b ?? 0), 0);
  return (ticks * 1e6) / CLOCK_TICKS;
}

/** A field of /proc/<pid>/status in kB, e.g. VmRSS (now) or VmHWM (the peak so far). */
export function statusKb(pid: number, field: "VmRSS" | "VmHWM"): number {
  const status = readFileSync(`/proc/${pid}/status`, "utf8");
  const match = new RegExp(`^${field}:\\s+(\\d+) kB`, "m").exec(status);
  return match ? Number(match[1]) : 0;
}

/** Samples the resident memory of some processes while a run lasts, keeping each one's peak. */
export class RssSampler {
  readonly #peakKb = new Map<number, number>();
  readonly #timer: NodeJS.Timeout;

  constructor(pids: number[], intervalMs = 100) {
    const sample = () => {
      for (const pid of pids) {
        try {
          this.#peakKb.set(pid, Math.max(this.#peakKb.get(pid) ?? 0, statusKb(pid, "VmRSS")));
        } catch {
          // the process is gone; the run will fail on its own
        }
      }
    };
    sample();
    this.#timer = setInterval(sample, intervalMs);
  }

  stop(): void {
    clearInterval(this.#timer);
  }

  /** The highest resident set size of pid seen so far, in MB. */
  peakMb(pid: number): number {
    return (this.#peakKb.get(pid) ?? 0) / 1024;
  }
}
