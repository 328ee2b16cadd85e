// Lua scripts on Redis by their SHA1 (EVALSHA): the first call on a server that does not know
// a script yet gets NOSCRIPT and sends it whole once (EVAL, which also caches it there). The
// ledger's scripts are up to 6 KB; sent with every call (EVAL), their text cost the gateway
// its UTF-8 encoding and Redis its hash, on each of a call's two or more scripts.
import { createHash } from "node:crypto";
import type { Redis } from "ioredis";

const shas = new Map<string, string>();

function sha1(lua: string): string {
  let sha = shas.get(lua);
  if (sha === undefined) {
    sha = createHash("sha1").update(lua).digest("hex");
    shas.set(lua, sha);
  }
  return sha;
}

/** Runs `lua` with `keys` and `args` (KEYS and ARGV), as EVAL would. */
export async function runScript(
  client: Redis,
  lua: string,
  keys: readonly string[],
  args: readonly (string | number)[],
): Promise<unknown> {
  try {
    return await client.evalsha(sha1(lua), keys.length, ...keys, ...args);
  } catch (err) {
    // Redis restarted, failed over or had its script cache flushed since this script last ran
    if (!(err instanceof Error) || !err.message.startsWith("NOSCRIPT")) throw err;
    return client.eval(lua, keys.length, ...keys, ...args);
  }
}
