import assert from "node:assert/strict";
import { spawn } from "node:child_process";
import { once } from "node:events";
import { test } from "node:test";
import { classifySmaps, memoryParts, statusKb } from "./proc-stats.ts";

// Mappings as /proc/<pid>/smaps lists them (fields after Rss trimmed): the node binary, the
// allocator's main arena, two V8 pages, a large V8 object and a thread's arena.
const SMAPS = `00400000-04c3e000 r--p 00000000 fe:00 1234   /usr/bin/node
Size:              73976 kB
Rss:               40960 kB
Anonymous:             0 kB
0802c000-0db91000 rw-p 00000000 00:00 0                                  [heap]
Size:              93588 kB
Rss:               92160 kB
Anonymous:         92160 kB
28b1f21c0000-28b1f2200000 rw-p 00000000 00:00 0 
Size:                256 kB
Rss:                 256 kB
Anonymous:           256 kB
28b1f2200000-28b1f2240000 rw-p 00000000 00:00 0 
Size:                256 kB
Rss:                 128 kB
Anonymous:           128 kB
28b1f2240000-28b1f2941000 rw-p 00000000 00:00 0 
Size:               7172 kB
Rss:                7172 kB
Anonymous:          7172 kB
7f8c3c000000-7f8c3dc3a000 rw-p 00000000 00:00 0 
Size:              28904 kB
Rss:               28672 kB
Anonymous:         28672 kB
`;

test("classifySmaps: file pages, the main arena, V8's 256 KiB pages and the rest, by resident size", () => {
  assert.deepEqual(classifySmaps(SMAPS), {
    fileMb: 40,
    mallocMainMb: 90,
    v8PagesMb: 384 / 1024,
    otherAnonMb: (7172 + 28672) / 1024,
  });
});

test("memoryParts of a running process add up to its resident size", async () => {
  // A quiet child, not this process: the test runner allocates while it reads its own smaps
  // (a megabyte of text), and CI once saw its resident size move 8 MB between the two reads.
  const child = spawn(process.execPath, ["-e", "process.stdout.write('up'); setInterval(() => {}, 1000)"], {
    stdio: ["ignore", "pipe", "inherit"],
  });
  try {
    await once(child.stdout, "data");
    const pid = child.pid!;
    const before = statusKb(pid, "VmRSS") / 1024;
    const parts = memoryParts(pid);
    const after = statusKb(pid, "VmRSS") / 1024;
    const sum = parts.fileMb + parts.v8PagesMb + parts.mallocMainMb + parts.otherAnonMb;
    assert.ok(
      sum >= Math.min(before, after) - 1 && sum <= Math.max(before, after) + 1,
      `parts ${sum.toFixed(1)} MB, VmRSS ${before.toFixed(1)}-${after.toFixed(1)} MB`,
    );
    assert.ok(parts.v8PagesMb > 0, "a Node process has V8 heap pages");
    assert.ok(parts.fileMb > 0, "and the node binary's pages");
  } finally {
    child.kill();
  }
});
