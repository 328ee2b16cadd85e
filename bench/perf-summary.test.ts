// The perf summary: samples read from `perf script` text, billed to the nearest project file or
// package on the stack, the kernel counted whatever the area, other threads apart.
import assert from "node:assert/strict";
import { describe, test } from "node:test";
import { areaOf, format, readSamples, summarise } from "./perf-summary.ts";

// `perf script -F comm,pid,tid,ip,sym,dso` of a gateway (pid 700) checked out under a folder
// that is itself called src/, with --perf-basic-prof naming its JIT code in /tmp/perf-700.map.
const SCRIPT = `MainThread   700/700
\t    ffffffff8135c1e1 ext4_da_write_begin ([kernel.kallsyms])
\t    ffffffff82259cc1 do_syscall_64 ([kernel.kallsyms])
\t           d4ad7 __GI___libc_write (/usr/lib/x86_64-linux-gnu/libc.so.6)
\t    7f00000a0000 JS:*writeSync node:fs:943:19 (/tmp/perf-700.map)
\t    7f00000a1000 JS:*'append file:///home/me/src/gateway/src/records/journal.ts:65:9 (/tmp/perf-700.map)
\t    7f00000a2000 JS:*'finish file:///home/me/src/gateway/src/relay/finish.ts:53:3 (/tmp/perf-700.map)

MainThread   700/700
\t          4e1b05 Builtins_KeyedLoadIC_Megamorphic (/opt/node/bin/node)
\t    7f00000b0000 JS:*'_resume /home/me/src/gateway/node_modules/undici/lib/dispatcher/client.js:663:18 (/tmp/perf-700.map)
\t    7f00000b1000 JS:*'post file:///home/me/src/gateway/src/providers/http-upstream.ts:55:3 (/tmp/perf-700.map)

MainThread   700/700
\t    7f00000c0000 JS:*parse /home/me/src/gateway/node_modules/@scope/pkg/src/index.js:1:1 (/tmp/perf-700.map)

MainThread   700/700
\t    ffffffff815a2001 _raw_spin_unlock_irqrestore ([kernel.kallsyms])
\t    ffffffff82259cc1 do_syscall_64 ([kernel.kallsyms])
\t           2ab12 uv__io_poll (/opt/node/bin/node)

MainThread   700/700
\t          5e1b05 v8::internal::Scavenger::ScavengeObject<v8::internal::FullHeapObjectSlot> (/opt/node/bin/node)

MainThread   700/700
\t          6e1b05 llhttp__internal__run (/opt/node/bin/node)

V8Worker   700/703
\t          5e1b05 v8::internal::Scavenger::ScavengeObject<v8::internal::FullHeapObjectSlot> (/opt/node/bin/node)

swapper     0/0
\t    ffffffff8225f846 pv_native_safe_halt ([kernel.kallsyms])
`;

describe("perf summary", () => {
  const summary = summarise(readSamples(SCRIPT.split("\n")));

  test("each main-thread sample goes to the nearest project file or package on its stack", () => {
    assert.equal(summary.main, 6, "the idle task and the GC helper are not the event loop");
    assert.deepEqual(Object.fromEntries(summary.byArea), {
      // a write(2) under the journal is the journal's, kernel time included; Node's fs in
      // between belongs to its caller; the checkout's own src/ folder is not the project's
      "src/records/journal.ts": 1,
      undici: 1,
      "@scope/pkg": 1,
      "(kernel, no project code on the stack)": 1,
      "(garbage collector)": 1,
      "(Node and V8, no project code on the stack)": 1,
    });
  });

  test("kernel time is counted whatever the area; other threads by name", () => {
    assert.equal(summary.kernel, 2);
    assert.deepEqual(Object.fromEntries(summary.otherThreads), { V8Worker: 1 });
  });

  test("the report: shares of the main thread, JIT frames named without the checkout's path", () => {
    const text = format("gateway.data", summary, 10);
    assert.match(
      text,
      /^gateway\.data: 6 samples of the main thread \(the event loop\); 1 of other threads \(V8Worker 1\)$/m,
    );
    assert.match(text, /^in the kernel: 33\.3% of the main thread's CPU$/m);
    assert.match(text, /^ {2}16\.7% {8}1 {2}src\/records\/journal\.ts$/m);
    assert.match(text, /^ {2}16\.7% {8}1 {2}JS:\*parse @scope\/pkg\/src\/index\.js:1:1 \[JIT\]$/m);
    assert.match(text, /^ {2}16\.7% {8}1 {2}ext4_da_write_begin \[kernel\]$/m);
    assert.equal(format("x.data", summarise(readSamples([])), 10), "x.data: no samples of a main thread");
  });

  test("a stack without frames still has an area", () => {
    assert.equal(areaOf([]), "(Node and V8, no project code on the stack)");
  });
});
