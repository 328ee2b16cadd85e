// How long the event loop stalls while work runs: the longest gap between the ticks of a 1 ms
// interval, ticking a little before and after the work so a stall that ends with it is seen.
// For tests and the bench's measurements of counting on (or off) the event loop.
import { setTimeout as sleep } from "node:timers/promises";

export async function longestStall<T>(work: () => Promise<T>): Promise<{ value: T; stall: number }> {
  let last = performance.now();
  let stall = 0;
  const tick = setInterval(() => {
    const now = performance.now();
    stall = Math.max(stall, now - last);
    last = now;
  }, 1);
  try {
    await sleep(20);
    const value = await work();
    await sleep(20);
    return { value, stall: Math.max(stall, performance.now() - last) };
  } finally {
    clearInterval(tick);
  }
}
