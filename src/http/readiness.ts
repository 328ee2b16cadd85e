// What /readyz answers: whether this instance should be sent traffic, and if not, which check
// failed and what it met, so the probe's answer is the diagnosis. Nothing in it names a
// credential: no URL is shown and error texts are masked (src/store/reachability.ts).
import { pendingMigrations, ping, type Store } from "../store/db.ts";
import { failureText, isConnectionFailure } from "../store/reachability.ts";
import type { RedisState } from "../store/redis-state.ts";

/** A check with no answer within this long has failed: a probe must not hang on a store that does not answer. */
export const CHECK_TIMEOUT_MS = 2_000;

export interface ReadinessAnswer {
  status: "ready" | "unready";
  checks: {
    /** "ok", "unreachable: …" (a connection failure or no answer) or "error: …" */
    store: string;
    /** the same for Redis; absent when the gateway runs without it */
    redis?: string;
    /** "ok", "pending: <names>" or "unknown: …" when the store could not say */
    migrations: string;
    /** SIGTERM was received: the instance finishes its calls and refuses new ones */
    draining: boolean;
  };
}

export interface ReadinessSources {
  store: Store;
  redis: RedisState | undefined;
  draining(): boolean;
}

class NoAnswer extends Error {
  override name = "NoAnswer";
}

async function withinTimeout<T>(work: Promise<T>): Promise<T> {
  let timer: NodeJS.Timeout | undefined;
  const late = new Promise<never>((_, reject) => {
    timer = setTimeout(
      () => reject(new NoAnswer(`no answer within ${CHECK_TIMEOUT_MS} ms`)),
      CHECK_TIMEOUT_MS,
    );
  });
  try {
    return await Promise.race([work, late]);
  } finally {
    clearTimeout(timer);
  }
}

function failed(err: unknown): string {
  const unreachable = err instanceof NoAnswer || isConnectionFailure(err);
  return `${unreachable ? "unreachable" : "error"}: ${failureText(err)}`;
}

async function storeChecks(store: Store): Promise<{ store: string; migrations: string }> {
  try {
    await withinTimeout(ping(store));
  } catch (err) {
    return { store: failed(err), migrations: "unknown: the store did not answer" };
  }
  try {
    const pending = await withinTimeout(pendingMigrations(store));
    return { store: "ok", migrations: pending.length ? `pending: ${pending.join(", ")}` : "ok" };
  } catch (err) {
    return { store: "ok", migrations: `unknown: ${failureText(err)}` };
  }
}

/** Redis's state as its connections last saw it, confirmed by a round trip while they say it answers. */
async function redisCheck(redis: RedisState): Promise<string> {
  if (!redis.reachability.reachable) return redis.reachability.status;
  try {
    await withinTimeout(redis.client.ping());
    return "ok";
  } catch (err) {
    return failed(err);
  }
}

export async function readiness(sources: ReadinessSources): Promise<ReadinessAnswer> {
  const [store, redis] = await Promise.all([
    storeChecks(sources.store),
    sources.redis ? redisCheck(sources.redis) : undefined,
  ]);
  const draining = sources.draining();
  const checks = {
    store: store.store,
    ...(redis === undefined ? {} : { redis }),
    migrations: store.migrations,
    draining,
  };
  const ready = store.store === "ok" && store.migrations === "ok" && (redis ?? "ok") === "ok" && !draining;
  return { status: ready ? "ready" : "unready", checks };
}
