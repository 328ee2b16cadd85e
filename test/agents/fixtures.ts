// The clients' recorded requests (test/fixtures/agents/<client>-<version>/): what the pinned
// Claude Code, Codex CLI and Gemini CLI sent, body and headers, for fast tests of each edge that need no
// client installed. The suite records them from a run straight against the mock (so they are
// the clients' own requests whatever the gateway makes of them) when AGENTS_RECORD=1
// (`npm run test:agents -- --record`), and otherwise compares what the clients send with them.
import { spawnSync } from "node:child_process";
import { existsSync, mkdirSync, readdirSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { homedir, tmpdir } from "node:os";
import { basename, join } from "node:path";
import { fileURLToPath } from "node:url";
import type { ClientName } from "./install.ts";
import { agentsDir, versionOf } from "./install.ts";
import type { Exchange } from "./recorder.ts";

export const FIXTURES_ROOT = fileURLToPath(new URL("../fixtures/agents/", import.meta.url));

/** The folder of a client's fixtures at its pinned version. */
export const fixtureDir = (client: ClientName): string => `${FIXTURES_ROOT}${client}-${versionOf(client)}`;

/** One recorded request. */
export interface AgentFixture {
  client: ClientName;
  version: string;
  /**
   * `<model>-<output>`: the model the client asked for (`default`: its own default; `named`: a
   * model of the gateway's plan the user set) and its output mode as its flag says (Claude
   * Code: `json`, `stream-json`; Codex: `text`, `json`), which changes what some clients send
   */
  variant: string;
  /** 1: the task; 2: the tool's result; … */
  turn: number;
  /** the model the client asked for */
  model: string;
  method: string;
  /** as the client sent it (its base URL left out) */
  path: string;
  /** the client's headers, keys replaced (GATEWAY_KEY_PLACEHOLDER) */
  headers: Record<string, string>;
  /** the body's size as the client sent it, in bytes */
  bytes: number;
  body: any;
}

export const GATEWAY_KEY_PLACEHOLDER = "sk-gateway-key";

/** A recorded request of the pinned version: `<variant>.turn-<n>` (e.g. `default-json.turn-1`). */
export function loadAgentFixture(client: ClientName, name: string): AgentFixture {
  return JSON.parse(readFileSync(`${fixtureDir(client)}/${name}.json`, "utf8"));
}

/** The names of a client's recorded requests (e.g. `default-json.turn-1`), sorted. */
export function agentFixtureNames(client: ClientName): string[] {
  const dir = fixtureDir(client);
  if (!existsSync(dir)) return [];
  return readdirSync(dir)
    .filter((f) => /\.turn-\d+\.json$/.test(f))
    .map((f) => f.replace(/\.json$/, ""))
    .sort();
}

/** Headers of the connection, not of the client: left out. */
const CONNECTION_HEADERS = new Set(["host", "content-length", "connection", "accept-encoding"]);

/**
 * Paths of this machine a run's requests carry (its working folder, its home, as paths and in
 * the dash-separated form clients name project folders with), replaced by neutral ones; the
 * key by a placeholder.
 */
export function scrubber(
  run: { workdir: string; home: string; root: string },
  key: string,
): (text: string) => string {
  const dashed = (p: string) => p.replace(/[^A-Za-z0-9]/g, "-");
  const pairs: [string, string][] = [
    // Gemini CLI's folder of the project under its home, named by the working folder's name:
    // written so that no `/tmp/` or `/work/` is left for the leak check to take for this machine's
    [join(run.home, ".gemini", "tmp", basename(run.workdir)), "/home/user/.gemini/tmp-project"],
    [run.workdir, "/home/user/project"],
    [dashed(run.workdir), dashed("/home/user/project")],
    [run.home, "/home/user"],
    [dashed(run.home), dashed("/home/user")],
    [run.root, "/home"],
    [agentsDir(), "/opt/agents"],
    [key, GATEWAY_KEY_PLACEHOLDER],
  ];
  return (text) => pairs.reduce((t, [from, to]) => t.split(from).join(to), text);
}

/**
 * What a fixture must never carry: paths of this machine (the install folder, the user's home
 * and its dot-folders, the checkout, temporary folders). Codex's agent names (`/root/task1`)
 * are no paths and stay.
 */
const LEAKS = [agentsDir(), `${homedir()}/.`, "/work/", `${tmpdir()}/`, "/var/tmp/", "chat-gateway-agents"];

/** The model a request asks for: in its body (Messages, Responses), or its path (Gemini's `models/{model}:…`). */
export function modelOf(e: { body?: any; path: string }): string | undefined {
  if (typeof e.body?.model === "string") return e.body.model;
  const path = /\/models\/(.+):[A-Za-z]+(?:\?|$)/.exec(e.path);
  return path ? decodeURIComponent(path[1]!) : undefined;
}

/** A request as a fixture: headers of the client only, its key and this machine's paths replaced. */
export function toFixture(
  e: Exchange,
  meta: { client: ClientName; variant: string; turn: number },
  scrub: (text: string) => string,
): AgentFixture {
  const headers: Record<string, string> = {};
  for (const [name, value] of Object.entries(e.headers))
    if (!CONNECTION_HEADERS.has(name) && value !== undefined)
      headers[name] = Array.isArray(value) ? value.join(", ") : value;
  const fixture: AgentFixture = JSON.parse(
    scrub(
      JSON.stringify({
        client: meta.client,
        version: versionOf(meta.client),
        variant: meta.variant,
        turn: meta.turn,
        model: modelOf(e),
        method: e.method,
        path: e.path,
        headers,
        bytes: e.bytes,
        body: e.body,
      }),
    ),
  );
  const text = JSON.stringify(fixture);
  for (const leak of LEAKS)
    if (text.includes(leak)) throw new Error(`a recorded request still carries ${leak} after scrubbing`);
  return fixture;
}

/**
 * Before a recording: the client's fixtures are removed, of every version (the fixtures are of
 * the pin, and a variant no longer recorded must not linger).
 */
export function clearFixtures(client: ClientName): void {
  for (const entry of existsSync(FIXTURES_ROOT) ? readdirSync(FIXTURES_ROOT) : [])
    if (entry.startsWith(`${client}-`) && /^\d/.test(entry.slice(client.length + 1)))
      rmSync(`${FIXTURES_ROOT}${entry}`, { recursive: true, force: true });
}

/** Writes a run's requests as `<variant>.turn-<n>.json` in the client's folder of its pinned version. */
export function writeFixtures(client: ClientName, variant: string, fixtures: readonly AgentFixture[]): void {
  const dir = fixtureDir(client);
  mkdirSync(dir, { recursive: true });
  for (const f of readdirSync(dir)) if (f.startsWith(`${variant}.turn-`)) rmSync(`${dir}/${f}`);
  for (const f of fixtures)
    writeFileSync(`${dir}/${variant}.turn-${f.turn}.json`, `${JSON.stringify(f, null, 2)}\n`);
  formatJson(dir);
}

/** Formats JSON files as the repository's `biome check` wants them (arrays that fit on one line, …). */
export function formatJson(path: string): void {
  const biome = fileURLToPath(new URL("../../node_modules/@biomejs/biome/bin/biome", import.meta.url));
  const run = spawnSync(process.execPath, [biome, "format", "--write", path], { encoding: "utf8" });
  if (run.status !== 0) throw new Error(`biome format ${path} failed: ${run.stderr || run.stdout}`);
}

/** The names a client's requests use, each list sorted: what a new release is compared on. */
export interface Inventory {
  headers: string[];
  betas: string[];
  fields: string[];
  /** the fields of the top-level objects (`thinking.display`, `reasoning.effort`, …) */
  subfields: string[];
  roles: string[];
  /** the fields of messages and input items beyond role, content and type (`output_config (system message)`) */
  messageFields: string[];
  blocks: string[];
  tools: string[];
  /** the fields of tools (`defer_loading`, `external_web_access (web_search)`, …) */
  toolFields: string[];
  items: string[];
}

const sorted = (set: Set<string>) => [...set].sort();

/**
 * The inventory of some requests: header names, `anthropic-beta` flags, top-level body fields
 * and their objects' fields, message roles and the fields messages carry beyond them, content
 * block (or part) types with where they stood, tool types (a tool with no type is `custom` in
 * Messages; tools inside namespaces and additional_tools items too) and their fields, and
 * input item types (Responses).
 */
export function inventory(requests: readonly { headers: Record<string, string>; body: any }[]): Inventory {
  const s = {
    headers: new Set<string>(),
    betas: new Set<string>(),
    fields: new Set<string>(),
    subfields: new Set<string>(),
    roles: new Set<string>(),
    messageFields: new Set<string>(),
    blocks: new Set<string>(),
    tools: new Set<string>(),
    toolFields: new Set<string>(),
    items: new Set<string>(),
  };
  const tools = (list: unknown, where: string) => {
    if (!Array.isArray(list)) return;
    for (const t of list) {
      const type = t?.type ?? "custom";
      s.tools.add(`${type}${where}${t?.defer_loading ? " (defer_loading)" : ""}`);
      for (const k of Object.keys(t ?? {})) s.toolFields.add(`${k} (${type})`);
      if (t?.type === "namespace") tools(t.tools, ` in namespace`);
    }
  };
  const extra = (o: unknown, where: string) => {
    for (const k of Object.keys(o ?? {}))
      if (!["role", "content", "type"].includes(k)) s.messageFields.add(`${k} (${where})`);
  };
  const blocks = (content: unknown, where: string) => {
    if (!Array.isArray(content)) return;
    for (const b of content) {
      s.blocks.add(`${b?.type} (${where})`);
      if (b?.type === "tool_result") blocks(b.content, "tool_result");
    }
  };
  for (const { headers, body } of requests) {
    for (const h of Object.keys(headers)) s.headers.add(h);
    for (const b of (headers["anthropic-beta"] ?? "").split(",")) if (b.trim()) s.betas.add(b.trim());
    for (const [f, v] of Object.entries(body ?? {})) {
      s.fields.add(f);
      if (v && typeof v === "object" && !Array.isArray(v) && f !== "metadata" && f !== "client_metadata")
        for (const k of Object.keys(v)) s.subfields.add(`${f}.${k}`);
    }
    tools(body?.tools, "");
    if (Array.isArray(body?.system)) blocks(body.system, "system prompt");
    for (const m of body?.messages ?? []) {
      s.roles.add(m.role);
      extra(m, `${m.role} message`);
      if (typeof m.content === "string") s.blocks.add(`string (${m.role} message)`);
      blocks(m.content, `${m.role} message`);
    }
    for (const item of Array.isArray(body?.input) ? body.input : []) {
      const type = item?.type ?? "message";
      s.items.add(type === "message" ? `message (${item.role})` : type);
      extra(item, type === "message" ? `${item.role} message` : type);
      if (item?.role) s.roles.add(item.role);
      if (type === "additional_tools") tools(item.tools, " in additional_tools");
      blocks(item?.content, type === "message" ? item.role : type);
      if (Array.isArray(item?.output)) blocks(item.output, `${type}.output`);
    }
  }
  return {
    headers: sorted(s.headers),
    betas: sorted(s.betas),
    fields: sorted(s.fields),
    subfields: sorted(s.subfields),
    roles: sorted(s.roles),
    messageFields: sorted(s.messageFields),
    blocks: sorted(s.blocks),
    tools: sorted(s.tools),
    toolFields: sorted(s.toolFields),
    items: sorted(s.items),
  };
}

/**
 * Writes `inventory.json` beside a client's fixtures: the names its requests use, per variant
 * (its default model, a model the user names), for a reader who wants the list without the bodies.
 */
export function writeInventory(client: ClientName): void {
  const names = agentFixtureNames(client);
  const variants = [...new Set(names.map((n) => n.split(".")[0]!))];
  const out: Record<string, unknown> = { client, version: versionOf(client) };
  for (const v of variants) {
    const fixtures = names.filter((n) => n.startsWith(`${v}.`)).map((n) => loadAgentFixture(client, n));
    out[v] = {
      model: fixtures[0]?.model,
      requests: fixtures.length,
      first_request_bytes: fixtures[0]?.bytes,
      ...inventory(fixtures),
    };
  }
  const file = `${fixtureDir(client)}/inventory.json`;
  writeFileSync(file, `${JSON.stringify(out, null, 2)}\n`);
  formatJson(file);
}

/** What `now` has that `recorded` had not, per list: the names a new release brought. */
export function newNames(now: Inventory, recorded: Inventory): Partial<Record<keyof Inventory, string[]>> {
  const out: Partial<Record<keyof Inventory, string[]>> = {};
  for (const k of Object.keys(now) as (keyof Inventory)[]) {
    const added = now[k].filter((n) => !recorded[k].includes(n));
    if (added.length) out[k] = added;
  }
  return out;
}
