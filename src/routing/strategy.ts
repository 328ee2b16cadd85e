// Which of the usable deployments an attempt goes to. The pool is never empty and keeps the
// configured order.
import type { ROUTING_STRATEGIES } from "../config/schema.ts";
import type { Deployment } from "../models/registry.ts";
import type { Traffic } from "./traffic.ts";

export type Strategy = (typeof ROUTING_STRATEGIES)[number];

/** At random, in proportion to the weights. */
function weighted(pool: readonly Deployment[], random: () => number): Deployment {
  if (pool.length === 1) return pool[0]!;
  let total = 0;
  for (const d of pool) total += d.weight;
  let point = random() * total;
  for (const d of pool) {
    point -= d.weight;
    if (point < 0) return d;
  }
  return pool[pool.length - 1]!;
}

/** The deployments with the lowest score; ties are broken by weight, at random. */
function lowest(
  pool: readonly Deployment[],
  score: (d: Deployment) => number,
  random: () => number,
): Deployment {
  let best = Number.POSITIVE_INFINITY;
  let tied: Deployment[] = [];
  for (const d of pool) {
    const s = score(d);
    if (s < best) {
      best = s;
      tied = [d];
    } else if (s === best) tied.push(d);
  }
  return weighted(tied, random);
}

export function pick(
  strategy: Strategy,
  pool: readonly Deployment[],
  traffic: Traffic,
  random: () => number,
): Deployment {
  switch (strategy) {
    case "ordered":
      return pool[0]!;
    case "least-busy":
      return lowest(pool, (d) => traffic.inFlight(d.id), random);
    case "latency":
      // One that never answered yet is tried first: it may be the fastest.
      return lowest(pool, (d) => traffic.latencyMs(d.id) ?? -1, random);
    default:
      return weighted(pool, random);
  }
}
