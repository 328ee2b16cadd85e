// The console API's call records (src/http/routes/console/records.ts) over real HTTP on
// loopback, on SQLite and PostgreSQL: the Today and Last-year views with calls made through /v1
// and fabricated old rows, filters and keyset pages, the export's CSV and JSON Lines, and
// another account's member kept out.
import assert from "node:assert/strict";
import { before, describe, test } from "node:test";
import { formatUsd } from "../src/prices/usd.ts";
import type { CallRecord } from "../src/records/call-record.ts";
import { DAY_MS, startOfUtcDay, utcDay } from "../src/records/days.ts";
import { RECORD_FIELDS } from "../src/records/queries.ts";
import { callRecord } from "./support/call-record.ts";
import {
  consoleApiSuite,
  costOf,
  noSecretInTheLogs,
  refused,
  STORES,
  tick,
  words,
} from "./support/console-api.ts";
import { type ConsoleSession, TEST_MODEL, type TestGateway } from "./support/gateway.ts";
import { storeSuite } from "./support/postgres.ts";

/** RFC 4180: quoted fields, doubled quotes, CRLF between records. */
function parseCsv(text: string): string[][] {
  const rows: string[][] = [];
  let row: string[] = [];
  let cell = "";
  let quoted = false;
  for (let i = 0; i < text.length; i++) {
    const ch = text[i]!;
    if (quoted) {
      if (ch === '"' && text[i + 1] === '"') {
        cell += '"';
        i++;
      } else if (ch === '"') quoted = false;
      else cell += ch;
    } else if (ch === '"') quoted = true;
    else if (ch === ",") {
      row.push(cell);
      cell = "";
    } else if (ch === "\r" && text[i + 1] === "\n") {
      row.push(cell);
      rows.push(row);
      row = [];
      cell = "";
      i++;
    } else cell += ch;
  }
  if (cell || row.length) rows.push([...row, cell]);
  return rows;
}

/** What a record's field looks like in a CSV cell, before quoting. */
function csvText(value: unknown): string {
  if (value === null || value === undefined) return "";
  const text = typeof value === "object" ? JSON.stringify(value) : String(value);
  return /^[=+\-@\t\r]/.test(text) ? `'${text}` : text;
}

function fabricated(
  overrides: Partial<CallRecord> & Pick<CallRecord, "request_id" | "created_at">,
): CallRecord {
  return callRecord({
    public_model: TEST_MODEL,
    upstream_model: "mock-model",
    provider: "mock",
    params: '{"temperature":0.2}',
    prompt_tokens: 3,
    completion_tokens: 4,
    latency_ms: 9,
    ...overrides,
  });
}

for (const store of STORES) {
  describe(`console API (${store} store)`, await storeSuite(store), () => {
    const api = consoleApiSuite(store);
    const { get, chat, secrets } = api;
    let gw: TestGateway;
    let outsider: ConsoleSession;
    let admin: ConsoleSession;
    let key: { id: string; secret: string };
    before(() => {
      ({ gw, outsider, admin, key } = api);
    });

    describe("call records", () => {
      let recAccount: string;
      let recOwner: ConsoleSession;
      let k1: { id: string; secret: string };
      let k2: { id: string; secret: string };
      const today: string[] = [];

      before(async () => {
        recAccount = await gw.account("records");
        recOwner = await gw.consoleUser(recAccount, { role: "owner" });
        k1 = await gw.key(recAccount, { name: "first" });
        k2 = await gw.key(recAccount, { name: "second" });
        secrets.push(k1.secret, k2.secret, recOwner.password, recOwner.cookie.split("=")[1]!);
        // through /v1: successes on two keys and two models, an upstream failure, a refusal
        const calls: [{ secret: string }, string, string?][] = [
          [k1, "one mock:tokens=4"],
          [k2, "two mock:tokens=6"],
          [k1, "three mock:tokens=2", "demo"],
          [k2, "four mock:status=500"],
          [k1, "five", "no-such-model"],
          [k1, "six mock:tokens=1"],
        ];
        for (const [k, content, model] of calls) {
          today.push((await chat(k.secret, content, model)).id);
          await tick();
        }
      });

      test("Today: every call of the day, failed ones too, newest first, with the record's fields", async () => {
        const res = await get("/records", recOwner);
        assert.equal(res.status, 200, res.text);
        assert.equal(res.body.next_before, null);
        assert.deepEqual(
          res.body.data.map((r: any) => r.request_id),
          [...today].reverse(),
        );
        const r = res.body.data.find((x: any) => x.request_id === today[0]);
        assert.deepEqual(Object.keys(r).sort(), [...RECORD_FIELDS].sort());
        const stored = await gw.record(today[0]!);
        assert.equal(r.created_at, Number(stored.created_at));
        assert.equal(r.key_id, k1.id);
        assert.equal(r.key_name, "first");
        assert.equal(r.key_prefix, k1.secret.slice(0, r.key_prefix.length));
        assert.equal(r.model, TEST_MODEL);
        assert.equal(r.api, "chat.completions");
        assert.equal(stored.api, "chat.completions");
        assert.equal(r.prompt_tokens, words("one mock:tokens=4"));
        assert.equal(r.completion_tokens, 4);
        assert.equal(r.total_tokens, r.prompt_tokens + 4);
        assert.equal(r.status, "ok");
        assert.equal(r.http_status, 200);
        assert.equal(r.stream, false);
        assert.equal(r.usage_source, "upstream");
        assert.deepEqual(r.params, JSON.parse(stored.params!));
        assert.equal(r.params.temperature, 0.5);
        assert.equal(r.safety_categories, null);
        // its cost by hand, with the token kinds it was computed from
        assert.deepEqual(
          [r.cached_tokens, r.cache_write_tokens, r.reasoning_tokens, r.cost_nanos, r.cost_source],
          [0, 0, 0, costOf(r.prompt_tokens, 4), "config"],
        );
        assert.equal(r.cost_nanos, Number(stored.cost_nanos));
        assert.equal(r.cost_usd, r.cost_nanos / 1e9);
        const unpriced = res.body.data.find((x: any) => x.request_id === today[2]);
        assert.equal(unpriced.model, "demo");
        assert.deepEqual([unpriced.cost_nanos, unpriced.cost_usd, unpriced.cost_source], [0, 0, "unpriced"]);
        const failed = res.body.data.find((x: any) => x.request_id === today[3]);
        assert.equal(failed.http_status, 502);
        assert.equal(failed.error_code, "upstream_error");
        assert.equal(failed.total_tokens, 0);
        const unknownModel = res.body.data.find((x: any) => x.request_id === today[4]);
        assert.equal(unknownModel.http_status, 404);
        assert.equal(unknownModel.error_code, "model_not_found");
        assert.deepEqual([unknownModel.cost_nanos, unknownModel.cost_source], [0, null]);
      });

      test("filters by key, model and status; keyset pages cover the view exactly once", async () => {
        const byKey = await get(`/records?key=${k2.id}`, recOwner);
        assert.deepEqual(
          byKey.body.data.map((r: any) => r.request_id),
          [today[3], today[1]],
        );
        const byModel = await get("/records?model=demo", recOwner);
        assert.deepEqual(
          byModel.body.data.map((r: any) => r.request_id),
          [today[2]],
        );
        // a call refused by the gateway or failed upstream before any output is an "error"
        // (upstream_error is a stream cut after output began)
        const failed = (await get("/records?status=error", recOwner)).body.data;
        assert.deepEqual(
          failed.map((r: any) => r.request_id),
          [today[4], today[3]],
        );
        assert.deepEqual((await get("/records?status=upstream_error", recOwner)).body.data, []);
        const both = await get(`/records?key=${k1.id}&status=ok&model=${TEST_MODEL}`, recOwner);
        assert.deepEqual(
          both.body.data.map((r: any) => r.request_id),
          [today[5], today[0]],
        );
        const seen: string[] = [];
        let cursor: string | null = null;
        let pages = 0;
        do {
          const res = await get(
            `/records?limit=2${cursor ? `&before=${encodeURIComponent(cursor)}` : ""}`,
            recOwner,
          );
          assert.equal(res.status, 200, res.text);
          assert.ok(res.body.data.length <= 2);
          seen.push(...res.body.data.map((r: any) => r.request_id));
          cursor = res.body.next_before;
          pages++;
        } while (cursor && pages < 10);
        assert.deepEqual(seen, [...today].reverse());
        assert.equal(pages, 3);
      });

      test("bad query strings are 400s naming the parameter; another account's key is not_found", async () => {
        refused(await get("/records?limit=0", recOwner), 400, "invalid_request", "limit");
        refused(await get("/records?limit=501", recOwner), 400, "invalid_request", "limit");
        refused(await get("/records?limit=ten", recOwner), 400, "invalid_request", "limit");
        refused(await get("/records?view=week", recOwner), 400, "invalid_request", "view");
        refused(await get("/records?status=fine", recOwner), 400, "invalid_request", "status");
        refused(await get("/records?before=yesterday", recOwner), 400, "invalid_request", "before");
        refused(await get("/records?sort=asc", recOwner), 400, "invalid_request", "sort");
        refused(await get(`/records?key=${key.id}`, recOwner), 404, "not_found", "key");
        refused(await get("/records/export?format=xlsx", recOwner), 400, "invalid_request", "format");
        refused(await get("/records/export?limit=5", recOwner), 400, "invalid_request", "limit");
      });

      test("Last year: the newest 1000 consumption records of 365 days; filters within those", async () => {
        const db = gw.gateway.deps.store.db;
        const day0 = startOfUtcDay(Date.now());
        const rows: CallRecord[] = [];
        // 1010 consumption records on past days (the oldest 10 fall outside the 1000 with
        // today's 4), zero-token ones, and consumption older than 365 days
        for (let i = 0; i < 1010; i++)
          rows.push(
            fabricated({
              request_id: `req_old${String(i).padStart(6, "0")}`,
              created_at: day0 - DAY_MS - i * 3_600_000,
              account_id: recAccount,
              key_id: i % 2 ? k1.id : k2.id,
              // the 10 oldest use a model nothing newer uses
              public_model: i >= 1000 ? "ancient" : TEST_MODEL,
              status: i % 7 ? "ok" : "client_disconnect",
            }),
          );
        for (let i = 0; i < 20; i++)
          rows.push(
            fabricated({
              request_id: `req_zero${String(i).padStart(5, "0")}`,
              created_at: day0 - DAY_MS - i * 1000,
              account_id: recAccount,
              status: "error",
              prompt_tokens: 0,
              completion_tokens: 0,
              total_tokens: 0,
            }),
          );
        rows.push(
          fabricated({
            request_id: "req_tooold0000001",
            created_at: day0 - 365 * DAY_MS,
            account_id: recAccount,
            public_model: "ancient",
          }),
        );
        for (let i = 0; i < rows.length; i += 200)
          await db
            .insertInto("call_records")
            .values(rows.slice(i, i + 200))
            .execute();

        const all: any[] = [];
        let cursor: string | null = null;
        do {
          const res = await get(
            `/records?view=year&limit=500${cursor ? `&before=${encodeURIComponent(cursor)}` : ""}`,
            recOwner,
          );
          assert.equal(res.status, 200, res.text);
          all.push(...res.body.data);
          cursor = res.body.next_before;
        } while (cursor);
        assert.equal(all.length, 1000);
        assert.ok(
          all.every((r) => r.total_tokens > 0),
          "consumption records only",
        );
        const todaysConsumption = (await get("/records", recOwner)).body.data.filter(
          (r: any) => r.total_tokens > 0,
        );
        assert.equal(todaysConsumption.length, 4);
        assert.deepEqual(
          all.slice(0, 4).map((r) => r.request_id),
          todaysConsumption.map((r: any) => r.request_id),
          "today's consumption records lead the year view",
        );
        assert.ok(!all.some((r) => r.model === "ancient"));
        for (let i = 1; i < all.length; i++)
          assert.ok(
            all[i - 1].created_at > all[i].created_at ||
              (all[i - 1].created_at === all[i].created_at && all[i - 1].request_id > all[i].request_id),
            "newest first",
          );
        // a filter never reaches past the 1000
        assert.deepEqual((await get("/records?view=year&model=ancient", recOwner)).body.data, []);
        const disconnects = (await get("/records?view=year&status=client_disconnect&limit=500", recOwner))
          .body.data;
        assert.deepEqual(
          disconnects.map((r: any) => r.request_id),
          all.filter((r) => r.status === "client_disconnect").map((r) => r.request_id),
        );
        const byKey = (await get(`/records?view=year&key=${k2.id}&limit=500`, recOwner)).body;
        assert.equal(byKey.next_before, null);
        assert.deepEqual(
          byKey.data.map((r: any) => r.request_id),
          all.filter((r) => r.key_id === k2.id).map((r) => r.request_id),
        );
      });

      test("export CSV: the whole view, RFC 4180, formula cells neutralised, as an attachment", async () => {
        const db = gw.gateway.deps.store.db;
        await db
          .insertInto("call_records")
          .values(
            fabricated({
              request_id: "req_injection00001",
              created_at: Date.now(),
              account_id: recAccount,
              key_id: k1.id,
              public_model: '=HYPERLINK("http://evil","x"),more',
              error_code: "+cmd|' /C calc'!A0",
              params: '{"note":"line\\nbreak, and \\"quotes\\""}',
              status: "error",
              safety_categories: '["violence","-x"]',
              // $0.00000015: String() would write 1.5e-7
              cost_nanos: 150,
              cost_source: "table",
              cached_tokens: 2,
            }),
          )
          .execute();
        const res = await fetch(`${gw.origin}/api/console/records/export?format=csv`, {
          headers: { cookie: recOwner.cookie },
        });
        assert.equal(res.status, 200);
        assert.match(res.headers.get("content-type") ?? "", /^text\/csv/);
        assert.equal(
          res.headers.get("content-disposition"),
          `attachment; filename="records-today-${utcDay(Date.now())}.csv"`,
        );
        const text = await res.text();
        assert.ok(text.endsWith("\r\n"));
        const [header, ...rows] = parseCsv(text);
        // Spelled out, not RECORD_FIELDS: readers take CSV columns by position, so the
        // contract's columns keep their places and every column added since comes after them.
        assert.deepEqual(header, [
          ...["request_id", "created_at", "key_id", "key_prefix", "key_name", "model"],
          ...["prompt_tokens", "completion_tokens", "total_tokens", "status", "http_status"],
          ...["error_code", "latency_ms", "ttft_ms", "stream", "params", "usage_source"],
          ...["safety_verdict", "safety_categories"],
          // #18's prices
          ...["cached_tokens", "cache_write_tokens", "reasoning_tokens", "cost_usd", "cost_nanos"],
          "cost_source",
          // #19's client APIs
          "api",
          // #31's agent sessions
          ...["session_id", "session_client"],
        ]);
        assert.deepEqual(header, [...RECORD_FIELDS]);
        const view = (await get("/records?limit=500", recOwner)).body.data;
        assert.equal(rows.length, view.length);
        rows.forEach((row, i) => {
          assert.deepEqual(
            row,
            // dollars as the exact decimal of the nanodollars, never in exponent form
            RECORD_FIELDS.map((f) =>
              f === "cost_usd" ? formatUsd(view[i].cost_nanos) : csvText(view[i][f]),
            ),
            `row ${i}`,
          );
        });
        const injected = rows.find((r) => r[0] === "req_injection00001")!;
        const cell = (f: (typeof RECORD_FIELDS)[number]) => injected[RECORD_FIELDS.indexOf(f)];
        assert.deepEqual(
          [cell("cost_usd"), cell("cost_nanos"), cell("cost_source"), cell("cached_tokens")],
          ["0.00000015", "150", "table", "2"],
        );
        const priced = rows.find((r) => r[0] === today[0])!;
        assert.equal(
          priced[RECORD_FIELDS.indexOf("cost_usd")],
          formatUsd(costOf(words("one mock:tokens=4"), 4)),
        );
        assert.equal(injected[RECORD_FIELDS.indexOf("model")], `'=HYPERLINK("http://evil","x"),more`);
        assert.equal(injected[RECORD_FIELDS.indexOf("error_code")], "'+cmd|' /C calc'!A0");
        assert.deepEqual(JSON.parse(injected[RECORD_FIELDS.indexOf("params")]!), {
          note: 'line\nbreak, and "quotes"',
        });
        assert.match(
          text,
          /"'=HYPERLINK\(""http:\/\/evil"",""x""\),more"/,
          "quotes doubled inside a quoted field",
        );
      });

      test("export JSON Lines of the Last-year view: 1000 records equal to the API's", async () => {
        const res = await fetch(`${gw.origin}/api/console/records/export?view=year&format=jsonl`, {
          headers: { cookie: recOwner.cookie },
        });
        assert.equal(res.status, 200);
        assert.match(res.headers.get("content-type") ?? "", /^application\/x-ndjson/);
        assert.equal(
          res.headers.get("content-disposition"),
          `attachment; filename="records-year-${utcDay(Date.now())}.jsonl"`,
        );
        const lines = (await res.text()).split("\n");
        assert.equal(lines.pop(), "", "every line ends with a newline");
        const exported = lines.map((l) => JSON.parse(l));
        assert.equal(exported.length, 1000);
        const viewed: any[] = [];
        let cursor: string | null = null;
        do {
          const page = await get(
            `/records?view=year&limit=500${cursor ? `&before=${encodeURIComponent(cursor)}` : ""}`,
            recOwner,
          );
          viewed.push(...page.body.data);
          cursor = page.body.next_before;
        } while (cursor);
        assert.deepEqual(exported, viewed);
        // filters apply to the export too
        const filtered = await fetch(
          `${gw.origin}/api/console/records/export?view=year&format=jsonl&key=${k1.id}`,
          {
            headers: { cookie: recOwner.cookie },
          },
        );
        const keyLines = (await filtered.text())
          .trim()
          .split("\n")
          .map((l) => JSON.parse(l));
        assert.deepEqual(
          keyLines.map((r) => r.request_id),
          viewed.filter((r) => r.key_id === k1.id).map((r) => r.request_id),
        );
        // an empty view is just the header (CSV) or nothing (JSONL)
        const none = await fetch(`${gw.origin}/api/console/records/export?format=csv&model=none-such`, {
          headers: { cookie: recOwner.cookie },
        });
        assert.equal(await none.text(), `${RECORD_FIELDS.join(",")}\r\n`);
      });

      test("an export the client abandons stops without harm", async () => {
        const controller = new AbortController();
        const res = await fetch(`${gw.origin}/api/console/records/export?view=year&format=csv`, {
          headers: { cookie: recOwner.cookie },
          signal: controller.signal,
        });
        const reader = res.body!.getReader();
        const first = await reader.read();
        assert.ok(first.value && first.value.length > 0);
        controller.abort();
        await reader.read().catch(() => undefined);
        // the gateway goes on answering
        assert.equal((await get("/records?limit=1", recOwner)).status, 200);
      });

      test("a member of another account cannot read or export these records", async () => {
        refused(await get(`/records?account=${recAccount}`, outsider), 404, "not_found");
        refused(await get(`/records/export?account=${recAccount}`, outsider), 404, "not_found");
        const own = await get("/records", outsider);
        assert.ok(!own.body.data.some((r: any) => today.includes(r.request_id)));
        const asAdmin = await get(`/records?account=${recAccount}&limit=500`, admin);
        assert.ok(today.every((id) => asAdmin.body.data.some((r: any) => r.request_id === id)));
      });
    });

    noSecretInTheLogs(api);
  });
}
