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

/**
 * A process's or a thread's stat file (`/proc/<pid>/stat`, `/proc/<pid>/task/<tid>/stat`): its
 * command name, and its user and system CPU time so far, in microseconds.
 */
export function statCpu(file: string): { name: string; user: number; system: number } {
  const stat = readFileSync(file, "utf8");
  // The command name (field 2) is in parentheses and may hold spaces: count fields after it.
  const fields = stat.slice(stat.lastIndexOf(")") + 2).split(" ");
  // Fields 14 (utime) and 15 (stime) of proc(5); field 3 (state) is index 0 here.
  return {
    name: stat.slice(stat.indexOf("(") + 1, stat.lastIndexOf(")")),
    user: (Number(fields[11]) * 1e6) / CLOCK_TICKS,
    system: (Number(fields[12]) * 1e6) / CLOCK_TICKS,
  };
}

/** User + system CPU time of the whole process so far, in microseconds. */
export function cpuMicros(pid: number): number {
  const { user, system } = statCpu(`/proc/${pid}/stat`);
  return user + system;
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

/**
 * Where a process's resident memory is, MB, read from /proc/<pid>/smaps: what shows the floor
 * of the memory goals. V8 maps its heap a page at a time, and its regular pages are 256 KiB
 * each, so those mappings are V8's heap (including pages a shrunk heap keeps for reuse);
 * "[heap]" is the C allocator's main arena; the rest of the anonymous memory is mostly the
 * allocator's arenas of other threads (V8's compiler and GC helpers, a worker thread's
 * isolate), V8's large objects and thread stacks. A page of a file (the node binary, its
 * libraries) can be shared with other processes and dropped by the kernel when needed.
 */
export interface MemoryParts {
  /** resident pages of mapped files */
  fileMb: number;
  /** V8's 256 KiB heap pages */
  v8PagesMb: number;
  /** the C allocator's main arena ("[heap]") */
  mallocMainMb: number;
  /** every other anonymous mapping */
  otherAnonMb: number;
}

const V8_PAGE_KB = 256;

/** The parts of one smaps text (see MemoryParts). */
export function classifySmaps(smaps: string): MemoryParts {
  const kb = { file: 0, v8: 0, main: 0, other: 0 };
  let mapping: { sizeKb: number; name: string } | undefined;
  let rssKb = 0;
  const close = () => {
    if (!mapping) return;
    if (mapping.name.startsWith("/")) kb.file += rssKb;
    else if (mapping.name === "[heap]") kb.main += rssKb;
    else if (mapping.name === "" && mapping.sizeKb === V8_PAGE_KB) kb.v8 += rssKb;
    else kb.other += rssKb;
  };
  for (const line of smaps.split("\n")) {
    const head = /^([0-9a-f]+)-([0-9a-f]+) \S+ \S+ \S+ \S+\s*(.*)$/.exec(line);
    if (head) {
      close();
      const sizeKb = Number((BigInt(`0x${head[2]}`) - BigInt(`0x${head[1]}`)) / 1024n);
      mapping = { sizeKb, name: head[3]!.trim() };
      rssKb = 0;
      continue;
    }
    const rss = /^Rss:\s+(\d+) kB/.exec(line);
    if (rss) rssKb = Number(rss[1]);
  }
  close();
  return {
    fileMb: kb.file / 1024,
    v8PagesMb: kb.v8 / 1024,
    mallocMainMb: kb.main / 1024,
    otherAnonMb: kb.other / 1024,
  };
}

/** The parts of a running process's resident memory. */
export function memoryParts(pid: number): MemoryParts {
  return classifySmaps(readFileSync(`/proc/${pid}/smaps`, "utf8"));
}
