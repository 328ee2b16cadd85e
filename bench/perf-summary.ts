// Reads a Linux perf recording of a bench server (`npm run bench -- --perf`) and prints where
// its CPU time went: by area (the nearest project file or npm package on the stack, as
// profile-summary.ts bills a V8 profile) and by the function that was running.
//
// Why a second profiler: V8's profiler (--profile) samples wall time, so a thread blocked in a
// syscall or waiting for a core is billed as busy there (the journal's write showed as 4.8 %
// of a profile while it took 1.6 µs of CPU in 12.7 µs). perf's samples are taken only while a
// thread runs, kernel work included, so its shares are shares of CPU time, what the bench's CPU
// column measures. The servers run with --perf-basic-prof, which names their JIT code for perf.
//   node bench/perf-summary.ts .bench/perf/gateway.data [--top 25]
import { spawn } from "node:child_process";
import { createInterface } from "node:readline";
import { parseArgs } from "node:util";
import { checkPerf } from "./perf-record.ts";

interface Frame {
  symbol: string;
  dso: string;
}

interface Sample {
  thread: string;
  pid: number;
  tid: number;
  frames: Frame[];
}

export interface PerfSummary {
  /** samples of each process's main thread (the event loop), all processes together */
  main: number;
  /** samples of the other threads, by thread name (V8's GC helpers, workers, libuv's pool) */
  otherThreads: Map<string, number>;
  /** main-thread samples by area */
  byArea: Map<string, number>;
  /** main-thread samples by the function running (the leaf) */
  byLeaf: Map<string, number>;
  /** main-thread samples spent in the kernel, whatever the area */
  kernel: number;
}

const HEADER = /^(\S.*?)\s+(\d+)\/(\d+)\s*$/;
const FRAME = /^\s+[0-9a-f]+ (.*) \((.*)\)\s*$/;
const PACKAGE = /node_modules\/((@[^/\s]+\/)?[^/\s:]+)/;
/** the last src/, bench/ or test/ folder of a path: the project's own, wherever it is checked out */
const OWN = /.*\/((?:src|bench|test)\/[^\s:]+)/;
const GC = /Scaveng|MarkCompact|Sweeper|Marking|Evacuat|Heap::CollectGarbage|MinorGC/;

/** The samples of `perf script -F comm,pid,tid,ip,sym,dso` output, one per blank-line-ended block. */
export function* readSamples(lines: Iterable<string>): Generator<Sample> {
  let current: Sample | undefined;
  for (const line of lines) {
    if (!line.trim()) {
      if (current) yield current;
      current = undefined;
      continue;
    }
    const header = HEADER.exec(line);
    if (header && !line.startsWith("\t") && !line.startsWith(" ")) {
      if (current) yield current;
      current = { thread: header[1]!, pid: Number(header[2]), tid: Number(header[3]), frames: [] };
      continue;
    }
    const frame = FRAME.exec(line);
    if (frame && current) current.frames.push({ symbol: frame[1]!, dso: frame[2]! });
  }
  if (current) yield current;
}

/** A JIT frame's project file or package; undefined for Node's own JS and for native code. */
function jsArea(frame: Frame): string | undefined {
  if (!frame.symbol.startsWith("JS:")) return undefined;
  const pkg = PACKAGE.exec(frame.symbol);
  if (pkg) return pkg[1];
  return OWN.exec(frame.symbol)?.[1];
}

function isKernel(frame: Frame | undefined): boolean {
  return frame?.dso === "[kernel.kallsyms]";
}

/** Where a sample's CPU goes: the nearest project file or package, else what kind of native work. */
export function areaOf(frames: readonly Frame[]): string {
  for (const frame of frames) {
    const area = jsArea(frame);
    if (area) return area;
  }
  const leaf = frames[0];
  if (isKernel(leaf)) return "(kernel, no project code on the stack)";
  if (leaf && GC.test(leaf.symbol)) return "(garbage collector)";
  return "(Node and V8, no project code on the stack)";
}

function leafName(frame: Frame | undefined): string {
  if (!frame) return "(no frame)";
  const symbol = frame.symbol
    .replace(/file:\/\/\S*?\/((?:src|bench|test)\/)/, "$1")
    .replace(/\S*node_modules\//, "");
  const where = isKernel(frame)
    ? "kernel"
    : frame.dso.startsWith("/tmp/perf-")
      ? "JIT"
      : (frame.dso.split("/").pop() ?? frame.dso);
  return `${symbol} [${where}]`;
}

function add(map: Map<string, number>, key: string): void {
  map.set(key, (map.get(key) ?? 0) + 1);
}

export function summarise(samples: Iterable<Sample>): PerfSummary {
  const summary: PerfSummary = {
    main: 0,
    otherThreads: new Map(),
    byArea: new Map(),
    byLeaf: new Map(),
    kernel: 0,
  };
  for (const sample of samples) {
    if (sample.pid === 0) continue; // the idle task, in a recording of the whole machine (-a)
    if (sample.tid !== sample.pid) {
      add(summary.otherThreads, sample.thread);
      continue;
    }
    summary.main++;
    add(summary.byArea, areaOf(sample.frames));
    add(summary.byLeaf, leafName(sample.frames[0]));
    if (isKernel(sample.frames[0])) summary.kernel++;
  }
  return summary;
}

function percent(n: number, of: number): string {
  return `${((100 * n) / of).toFixed(1).padStart(6)}%`;
}

export function format(file: string, summary: PerfSummary, top: number): string {
  const { main } = summary;
  if (main === 0) return `${file}: no samples of a main thread`;
  const others = [...summary.otherThreads].sort((a, b) => b[1] - a[1]);
  const table = (map: Map<string, number>) =>
    [...map]
      .sort((a, b) => b[1] - a[1])
      .slice(0, top)
      .map(([name, n]) => `${percent(n, main)}  ${String(n).padStart(7)}  ${name}`);
  return [
    `${file}: ${main} samples of the main thread (the event loop); ` +
      `${others.reduce((n, [, c]) => n + c, 0)} of other threads` +
      (others.length ? ` (${others.map(([name, n]) => `${name} ${n}`).join(", ")})` : ""),
    `in the kernel: ${percent(summary.kernel, main).trim()} of the main thread's CPU`,
    "",
    "main thread's CPU by area (nearest project file or package on the stack):",
    ...table(summary.byArea),
    "",
    "main thread's CPU by the function running:",
    ...table(summary.byLeaf),
  ].join("\n");
}

/** Runs `perf script` on a recording and summarises its samples. */
export async function summariseRecording(file: string): Promise<PerfSummary> {
  const perf = spawn("perf", ["script", "-i", file, "-F", "comm,pid,tid,ip,sym,dso"], {
    stdio: ["ignore", "pipe", "pipe"],
  });
  let stderr = "";
  perf.stderr.on("data", (chunk: Buffer) => {
    stderr += chunk.toString();
  });
  const exited = new Promise<number | null>((resolve, reject) => {
    perf.once("error", reject);
    perf.once("exit", resolve);
  });
  // gathered first: a recording's script is tens of MB of text, which fits, and the samples
  // are then read by the same code the test reads
  const lines: string[] = [];
  for await (const line of createInterface({ input: perf.stdout })) lines.push(line);
  const code = await exited;
  if (code !== 0) throw new Error(`perf script failed (exit ${code}): ${stderr.trim()}`);
  return summarise(readSamples(lines));
}

if (import.meta.main) {
  const { values, positionals } = parseArgs({
    allowPositionals: true,
    options: { top: { type: "string", default: "25" } },
  });
  if (positionals.length === 0) {
    console.error("usage: node bench/perf-summary.ts FILE.data [--top N]");
    process.exit(2);
  }
  checkPerf();
  for (const file of positionals)
    console.log(format(file, await summariseRecording(file), Number(values.top)));
}
