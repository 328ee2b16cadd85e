// A test gateway (./gateway.ts) in a child process of its own, run with --expose-gc, for tests
// that measure its memory: the heap then holds the gateway alone, not the test's clients and
// mock upstreams, and `heap()` collects before it reads. The child is this file.
import { type ChildProcess, fork } from "node:child_process";
import { once } from "node:events";
import { fileURLToPath } from "node:url";
import type { ConfigInput } from "../../src/config/schema.ts";
import { startTestGateway, type TestGateway } from "./gateway.ts";

export interface HeapFigures {
  /** V8's heap in use after a full collection */
  heapUsed: number;
  /** memory outside V8's heap held by JavaScript objects (Buffers among them) */
  external: number;
  rss: number;
}

export interface GatewayProcess {
  origin: string;
  /** an API key of an account on the default plan */
  secret: string;
  child: ChildProcess;
  /** the memory after a full collection (a few, until the heap stops shrinking) */
  heap(): Promise<HeapFigures>;
  /** the calls still holding a reservation */
  openCalls(): Promise<number>;
  close(): Promise<void>;
}

type Request = { id: number; op: "heap" | "open" | "close" };
type Reply = { id: number; value: unknown };

const SELF = fileURLToPath(import.meta.url);

export async function startGatewayProcess(config: Partial<ConfigInput>): Promise<GatewayProcess> {
  const child = fork(SELF, [], { execArgv: ["--expose-gc"], stdio: ["ignore", "inherit", "inherit", "ipc"] });
  const exited = once(child, "exit");
  child.send({ config });
  const [ready] = (await Promise.race([
    once(child, "message"),
    exited.then(([code]) => {
      throw new Error(`the gateway process exited (${code}) before it was ready`);
    }),
  ])) as [{ origin: string; secret: string }];
  let next = 0;
  const waiting = new Map<number, (value: unknown) => void>();
  child.on("message", (message: Reply) => {
    waiting.get(message.id)?.(message.value);
    waiting.delete(message.id);
  });
  const ask = (op: Request["op"]) =>
    new Promise<unknown>((resolve) => {
      const id = next++;
      waiting.set(id, resolve);
      child.send({ id, op } satisfies Request);
    });
  return {
    origin: ready.origin,
    secret: ready.secret,
    child,
    heap: () => ask("heap") as Promise<HeapFigures>,
    openCalls: () => ask("open") as Promise<number>,
    async close() {
      if (child.exitCode !== null) return;
      await ask("close");
      await exited;
    },
  };
}

async function collect(): Promise<HeapFigures> {
  const gc = (globalThis as { gc?: (options: object) => void }).gc!;
  let last = Number.POSITIVE_INFINITY;
  // Collections free what finalizers and weak references release only a step later. The
  // last-resort flavour compacts and drops what V8 keeps only for speed; a plain gc() left
  // megabytes of garbage counted, more than the figures a test compares.
  for (let i = 0; i < 8; i++) {
    gc({ type: "major", execution: "sync", flavor: "last-resort" });
    await new Promise((resolve) => setImmediate(resolve));
    const used = process.memoryUsage().heapUsed;
    if (used >= last - 64 * 1024) break;
    last = used;
  }
  const { heapUsed, external, rss } = process.memoryUsage();
  return { heapUsed, external, rss };
}

async function child(): Promise<void> {
  // the test went away without closing it: nothing else would
  process.once("disconnect", () => process.exit(0));
  const [{ config }] = (await once(process, "message")) as [{ config: Partial<ConfigInput> }];
  const gw: TestGateway = await startTestGateway({ config });
  const account = await gw.account("memory");
  const { secret } = await gw.key(account);
  process.on("message", async ({ id, op }: Request) => {
    let value: unknown;
    if (op === "heap") value = await collect();
    else if (op === "open") value = gw.gateway.deps.ledger.openReservations();
    else {
      await gw.close();
      process.send!({ id, value: null } satisfies Reply, () => process.exit(0));
      return;
    }
    process.send!({ id, value } satisfies Reply);
  });
  process.send!({ origin: gw.origin, secret });
}

if (process.argv[1] === SELF && process.send) await child();
