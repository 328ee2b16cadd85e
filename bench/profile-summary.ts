// Reads a V8 .cpuprofile (e.g. from `npm run bench -- --profile`) and prints where the busy
// time went: by area (the nearest src/ file or npm package on the stack, so Node internals are
// billed to whoever called them) and the heaviest src/ functions, inclusive of their callees.
// V8 samples wall time: a thread waiting in a syscall or for a core is billed as busy there;
// bench/perf-summary.ts (`npm run bench -- --perf`) gives CPU time.
//   node bench/profile-summary.ts .bench/profiles/gateway-….cpuprofile [--top 25]
import { readFileSync } from "node:fs";
import { parseArgs } from "node:util";

interface ProfileNode {
  id: number;
  callFrame: { functionName: string; url: string; lineNumber: number };
  children?: number[];
}

interface Profile {
  nodes: ProfileNode[];
  samples: number[];
  timeDeltas: number[];
}

const PACKAGE = /node_modules\/((@[^/]+\/)?[^/]+)/;
/** frames that are the VM's own bookkeeping rather than code */
const VM_FRAMES = new Set(["(garbage collector)", "(program)"]);

function label(node: ProfileNode): string {
  const { functionName, url, lineNumber } = node.callFrame;
  return `${functionName || "(anonymous)"} ${url.replace(/^file:\/\/.*?\/(src|bench|test|dist)\//, "$1/")}:${lineNumber + 1}`;
}

/** The project file or npm package a frame belongs to; undefined for Node internals. */
function area(node: ProfileNode): string | undefined {
  const { url } = node.callFrame;
  const pkg = PACKAGE.exec(url);
  if (pkg) return pkg[1];
  const own = /\/((src|bench|test|dist)\/.*)$/.exec(url);
  return own?.[1];
}

/** Microseconds of samples per leaf node, idle excluded. */
function busyTime(profile: Profile, byId: Map<number, ProfileNode>): Map<number, number> {
  const time = new Map<number, number>();
  profile.samples.forEach((id, i) => {
    if (byId.get(id)?.callFrame.functionName === "(idle)") return;
    time.set(id, (time.get(id) ?? 0) + (profile.timeDeltas[i] ?? 0));
  });
  return time;
}

function stackOf(id: number, byId: Map<number, ProfileNode>, parents: Map<number, number>): ProfileNode[] {
  const stack: ProfileNode[] = [];
  for (let cur: number | undefined = id; cur !== undefined; cur = parents.get(cur))
    stack.push(byId.get(cur)!);
  return stack;
}

function add(map: Map<string, number>, key: string, value: number): void {
  map.set(key, (map.get(key) ?? 0) + value);
}

function summarise(profile: Profile) {
  const byId = new Map(profile.nodes.map((n) => [n.id, n]));
  const parents = new Map<number, number>();
  for (const n of profile.nodes) for (const c of n.children ?? []) parents.set(c, n.id);
  const byArea = new Map<string, number>();
  const inclusive = new Map<string, number>();
  let busy = 0;
  for (const [id, micros] of busyTime(profile, byId)) {
    busy += micros;
    const stack = stackOf(id, byId, parents);
    const leaf = stack[0]!.callFrame.functionName;
    const owner = stack.map(area).find((a) => a !== undefined);
    add(byArea, owner ?? (VM_FRAMES.has(leaf) ? leaf : "node internals"), micros);
    // Each function once per sample, however deep its recursion.
    for (const name of new Set(stack.filter((n) => /^(src|dist)\//.test(area(n) ?? "")).map(label)))
      add(inclusive, name, micros);
  }
  return { busy, byArea, inclusive };
}

function print(title: string, map: Map<string, number>, busy: number, top: number): void {
  console.log(`\n${title}`);
  for (const [name, micros] of [...map].sort((a, b) => b[1] - a[1]).slice(0, top))
    console.log(
      `${((100 * micros) / busy).toFixed(1).padStart(6)}%  ${(micros / 1000).toFixed(0).padStart(7)} ms  ${name}`,
    );
}

const { values, positionals } = parseArgs({
  allowPositionals: true,
  options: { top: { type: "string", default: "25" } },
});
if (positionals.length === 0) {
  console.error("usage: node bench/profile-summary.ts FILE.cpuprofile [--top N]");
  process.exit(2);
}
for (const file of positionals) {
  const { busy, byArea, inclusive } = summarise(JSON.parse(readFileSync(file, "utf8")) as Profile);
  console.log(`${file}: ${(busy / 1e6).toFixed(2)} s busy (idle excluded)`);
  print(
    "busy time by area (nearest project file or package on the stack):",
    byArea,
    busy,
    Number(values.top),
  );
  print("heaviest project functions (inclusive):", inclusive, busy, Number(values.top));
}
