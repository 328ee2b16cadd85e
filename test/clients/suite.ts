// The scenarios every client library runs through the gateway, on the upstream its API speaks
// natively and on one it is translated to (test/support/messages-gateway.ts: `gpt-test` on
// the OpenAI-compatible mock, `claude` on the Anthropic mock): plain text, streamed text, a
// tool round trip (the mock calls the library's tool, the library runs it and sends the
// result, the final text arrives), streamed too, structured output through the library's
// JSON-schema path, a conversation the way the library builds it, a wrong key and an unknown
// model raised as the library's typed errors, and the usage the library reports against the
// call records, which hold the mock's usage as it reported it.
//
// A library file describes how the library does each (a Row); where the library itself is
// wrong, the Row says so and the test asserts the library's wrong behaviour by name, so a
// fix upstream fails it and is noticed.
import assert from "node:assert/strict";
import { after, before, describe, test } from "node:test";
import type { CallRecord } from "../../src/records/call-record.ts";
import { type MessagesGateway, startMessagesGateway } from "../support/messages-gateway.ts";
import { MOCK_TOOL_TEXT } from "../support/mock-provider.ts";
import { pinned } from "./install.ts";

/** The client API a library speaks to the gateway. */
export type ClientApi = "chat.completions" | "responses" | "messages";

/** Token counts as a library reports them: what the model read, what it wrote. */
export interface Usage {
  input: number;
  output: number;
}

export interface Reported {
  text: string;
  /** undefined: the library reports none */
  usage: Usage | undefined;
}

/** What a library's client is made with: the gateway, a key, a model, and the fetch to use. */
export interface ClientContext {
  /** the gateway's base URL, ending in /v1 */
  baseURL: string;
  /** the gateway's origin (Anthropic clients add /v1 themselves) */
  origin: string;
  key: string;
  model: string;
  /** a fetch that records every exchange (wire); clients that take a fetch use it */
  fetch: typeof fetch;
}

/** The tool every library defines: the mock calls it (mock:call=lookup_city). */
export const TOOL = {
  name: "lookup_city",
  description: "Looks up the weather of a city",
} as const;

/**
 * What the tool answers. Its directive makes the mock's next answer three words: the mock
 * reads directives from the tool result that ends the conversation.
 */
export const toolResult = (city: string) => `Sunny in a city of ${city.length} characters mock:tokens=3`;

/** The mock's answer of n words (test/support/mock-provider.ts, WORDS). */
export const mockText = (n: number) =>
  "Hello world this is a mock reply from the model with some simple words for testing"
    .split(" ")
    .slice(0, n)
    .join(" ");

/** What the mock fills the structured output's schema with: strings MOCK_TOOL_TEXT, numbers 1. */
export const STRUCTURED = { city: MOCK_TOOL_TEXT, population: 1 } as const;

/**
 * How a library asks for structured output: a JSON schema for the answer (`schema`: OpenAI's
 * response_format or text.format, Anthropic's output_config.format), or a tool the model is
 * made to call with the object as its arguments (`tool`).
 */
export type StructuredVia = "schema" | "tool";

export interface Client {
  /** one user message, the answer's text and usage */
  plain(prompt: string): Promise<Reported>;
  /** the same, streamed: the text put together from the stream, the usage the stream reported */
  stream(prompt: string): Promise<Reported>;
  /**
   * A tool round trip, as the library runs one: `run` is the tool's body (it returns
   * toolResult); the final text.
   */
  tools(prompt: string, stream: boolean, run: (city: string) => string): Promise<string>;
  /** the structured output, as the library parsed it; `variant` one of the row's */
  structured(prompt: string, variant: string): Promise<unknown>;
  /** the same, streamed: the object the library gives at the end of the stream */
  structuredStream(prompt: string, variant: string): Promise<unknown>;
  /** a conversation of these user turns, built the library's way; each answer's text */
  conversation(turns: string[], variant: string): Promise<string[]>;
}

export interface Row {
  /** the row's name in the docs' table, e.g. "AI SDK, openai(model)" */
  name: string;
  /** the pinned packages the row uses (their versions are in the test names) */
  packages: string[];
  api: ClientApi;
  client(ctx: ClientContext): Promise<Client>;
  /** asserts that `err` is the library's typed error for the gateway's `status` */
  typedError(err: unknown, status: 401 | 404): void;
  /** the row's ways of structured output: a label for the test name, how it asks */
  structured: { variant: string; label: string; via: StructuredVia }[];
  /** the row's ways of building a conversation; `check` asserts what the library sent */
  conversations: { variant: string; label: string; check?: (sent: WireCall[]) => void }[];
  /**
   * Where the library reports usage other than the call's: the library's bug, named, and
   * the figures it reports instead (the test asserts those, and that they are not the call's).
   */
  usageBugs?: {
    stream?: UsageBug;
    plain?: UsageBug;
  };
  /**
   * Where the library cannot read a streamed structured output the gateway delivered whole:
   * the library's bug, named, and the error it raises (the test asserts it, and that the
   * stream carried the object).
   */
  structuredStreamBug?: { bug: string; error: RegExp };
}

export interface UsageBug {
  /** names the library's bug, for the test's name */
  bug: string;
  /** the usage the library reports for this call, from the call's record and what went over the wire */
  reports(record: CallRecord, call: WireCall, native: boolean): Promise<Usage | undefined>;
  /** how an application gets the call's usage all the same: a client set up so (tested too) */
  workaround?: { label: string; client(ctx: ClientContext): Promise<Client> };
}

/** One exchange a client had with the gateway. */
export interface WireCall {
  method: string;
  url: string;
  /** the request's JSON body, parsed */
  body: any;
  status: number;
  requestId: string | null;
  /** the whole response text (a stream's events), read beside the client */
  text: Promise<string>;
}

/** A fetch that records every exchange into `calls`, for the clients that take one. */
export function wireFetch(calls: WireCall[]): typeof fetch {
  return async (input, init) => {
    const url = typeof input === "string" ? input : input instanceof URL ? input.href : input.url;
    const raw =
      typeof init?.body === "string"
        ? init.body
        : input instanceof Request
          ? await input.clone().text()
          : undefined;
    let body: unknown = raw;
    try {
      body = raw ? JSON.parse(raw) : undefined;
    } catch {}
    const res = await fetch(input, init);
    calls.push({
      method: init?.method ?? (input instanceof Request ? input.method : "GET"),
      url,
      body,
      status: res.status,
      requestId: res.headers.get("x-request-id"),
      text: res
        .clone()
        .text()
        .catch(() => ""),
    });
    return res;
  };
}

/** The names of an error's classes, its own first ("AuthenticationError", "APIError", …). */
export function classChain(err: unknown): string[] {
  const names: string[] = [];
  for (let p = Object.getPrototypeOf(err); p && p !== Object.prototype; p = Object.getPrototypeOf(p))
    names.push(p.constructor.name);
  return names;
}

/** The events of an SSE text: `data:` lines parsed. */
export function sseData(text: string): any[] {
  return text
    .split("\n")
    .filter((l) => l.startsWith("data: ") && l !== "data: [DONE]")
    .map((l) => JSON.parse(l.slice(6)));
}

interface Upstream {
  model: string;
  /** the upstream speaks the library's API (its answers pass as they came) or is translated */
  native: boolean;
  label: string;
}

/**
 * The upstreams of a row: the one its API speaks and the other. The Responses API's "native"
 * upstream is the OpenAI-compatible one, whose API family it is; a Responses call reaches it
 * as a chat completion (its provider has no `responses_api: native`).
 */
export function upstreamsOf(api: ClientApi): Upstream[] {
  const openai = { model: "gpt-test", label: "OpenAI-compatible upstream" };
  const anthropic = { model: "claude", label: "Anthropic upstream" };
  return api === "messages"
    ? [
        { ...anthropic, native: true },
        { ...openai, native: false },
      ]
    : [
        { ...openai, native: true },
        { ...anthropic, native: false },
      ];
}

/** The turns of an upstream request, whatever its wire format: role and text, system left out. */
function upstreamTurns(body: any): { role: string; text: string }[] {
  const text = (content: unknown): string =>
    typeof content === "string"
      ? content
      : Array.isArray(content)
        ? content
            .map((b: any) =>
              typeof b?.text === "string" ? b.text : b?.type === "tool_result" ? text(b.content) : "",
            )
            .join("")
        : "";
  return (body?.messages ?? [])
    .filter((m: any) => m.role !== "system" && m.role !== "developer")
    .map((m: any) => ({ role: m.role, text: text(m.content) }));
}

/** How the upstream was asked for structured output, whatever its wire format. */
function structuredAsked(body: any): StructuredVia | undefined {
  if (body?.response_format?.type === "json_schema" || body?.output_config?.format?.type === "json_schema")
    return "schema";
  const choice = body?.tool_choice;
  if (
    choice === "required" ||
    choice?.type === "function" ||
    choice?.type === "any" ||
    choice?.type === "tool"
  )
    return "tool";
  return undefined;
}

/** The suite of one row: every scenario on both upstreams. */
export function clientSuite(row: Row): void {
  const title = `${row.name} (${row.packages.map(pinned).join(", ")})`;
  describe(title, () => {
    let m: MessagesGateway;
    let keys = 0;
    before(async () => {
      m = await startMessagesGateway();
    });
    after(async () => {
      await m?.close();
    });

    /** A client of a fresh key (its records are the test's alone), and the exchanges it has. */
    async function setup(model: string, key?: string, make = row.client) {
      const calls: WireCall[] = [];
      const secret = key ?? (await m.gw.key(await m.gw.account(`clients-${++keys}`))).secret;
      const client = await make({
        baseURL: m.gw.baseURL,
        origin: m.gw.origin,
        key: secret,
        model,
        fetch: wireFetch(calls),
      });
      /** the API calls among the exchanges, and their records */
      const records = async (from = 0) => {
        const api = calls.slice(from).filter((c) => c.method === "POST");
        return Promise.all(
          api.map(async (c) => {
            assert.ok(c.requestId, `the gateway's answer to ${c.url} carries x-request-id`);
            return { call: c, record: await m.gw.record(c.requestId) };
          }),
        );
      };
      return { client, calls, records };
    }

    /** The call's record: answered by the upstream it was meant for, its usage the mock's. */
    function assertRecord(record: CallRecord, model: string, options: { stream: boolean; output?: number }) {
      assert.equal(record.status, "ok");
      assert.equal(record.api, row.api);
      assert.equal(record.public_model, model);
      assert.equal(
        record.provider,
        model === "claude" ? "anth" : "oai",
        "the upstream meant for the model answered",
      );
      assert.equal(Boolean(record.stream), options.stream, "the record says whether it streamed");
      assert.equal(record.usage_source, "upstream", "the record holds the mock's own usage");
      if (options.output !== undefined) assert.equal(Number(record.completion_tokens), options.output);
    }

    /** The usage a call reported by the Messages API's fields or the OpenAI APIs', from its record. */
    const usageOfRecord = (record: CallRecord): Usage => ({
      input:
        row.api === "messages"
          ? Number(record.prompt_tokens) - Number(record.cached_tokens) - Number(record.cache_write_tokens)
          : Number(record.prompt_tokens),
      output: Number(record.completion_tokens),
    });

    for (const upstream of upstreamsOf(row.api)) {
      const { model } = upstream;
      describe(`${upstream.label}, ${model} (${upstream.native ? "native" : "translated"})`, () => {
        test("plain text", async () => {
          const { client, records } = await setup(model);
          const answer = await client.plain("Say hello mock:tokens=4");
          assert.equal(answer.text, mockText(4));
          const [only, ...more] = await records();
          assert.equal(more.length, 0, "one call");
          assertRecord(only!.record, model, { stream: false, output: 4 });
        });

        test("streamed text", async () => {
          const { client, records } = await setup(model);
          const answer = await client.stream("Say hello mock:tokens=6");
          assert.equal(answer.text, mockText(6));
          const [only, ...more] = await records();
          assert.equal(more.length, 0, "one call");
          assertRecord(only!.record, model, { stream: true, output: 6 });
        });

        for (const stream of [false, true])
          test(`tool round trip${stream ? ", streamed" : ""}`, async () => {
            const { client, records } = await setup(model);
            const ran: string[] = [];
            const text = await client.tools(`What is the weather? mock:call=${TOOL.name}`, stream, (city) => {
              ran.push(city);
              return toolResult(city);
            });
            assert.deepEqual(ran, [MOCK_TOOL_TEXT], "the library ran the tool with the mock's arguments");
            assert.equal(text, mockText(3), "the final text, the answer to the tool's result");
            const calls = await records();
            assert.equal(calls.length, 2, "the call that asked for the tool, the one that sent its result");
            for (const { record } of calls) assertRecord(record, model, { stream });
            // the tool's result reached the model in the upstream's own format
            const last = m.mockOf(model).requests.at(-1)!.body;
            assert.ok(
              JSON.stringify(last).includes(toolResult(MOCK_TOOL_TEXT).slice(0, 20)),
              "the upstream read the tool's result",
            );
          });

        for (const { variant, label, via } of row.structured)
          test(`structured output (${label})`, async () => {
            const { client, records } = await setup(model);
            const object = await client.structured("Describe a city.", variant);
            assert.deepEqual(object, STRUCTURED);
            const calls = await records();
            assert.ok(calls.length >= 1);
            for (const { record } of calls) assertRecord(record, model, { stream: record.stream === 1 });
            assert.equal(
              structuredAsked(m.mockOf(model).requests.at(-1)!.body),
              via,
              "the upstream was asked for the structure in its own terms",
            );
          });

        for (const { variant, label, via } of row.structured) {
          const bug = row.structuredStreamBug;
          test(`structured output, streamed (${label})${bug ? ` (library bug: ${bug.bug})` : ""}`, async () => {
            const { client, records } = await setup(model);
            const result = client.structuredStream("Describe a city.", variant);
            if (bug) await assert.rejects(result, bug.error, "what the library raises");
            else assert.deepEqual(await result, STRUCTURED);
            const calls = await records();
            assert.ok(calls.length >= 1);
            for (const { record } of calls) assertRecord(record, model, { stream: true });
            assert.equal(structuredAsked(m.mockOf(model).requests.at(-1)!.body), via);
            // the object went over the wire whole, in the stream's deltas
            const streamed = await calls.at(-1)!.call.text;
            assert.ok(streamed.includes("population"), "the stream carried the object");
          });
        }

        for (const { variant, label, check } of row.conversations)
          test(`multi-turn conversation (${label})`, async () => {
            const { client, calls, records } = await setup(model);
            const answers = await client.conversation(
              ["First question mock:tokens=3", "Second question mock:tokens=5"],
              variant,
            );
            assert.deepEqual(answers, [mockText(3), mockText(5)]);
            const done = await records();
            assert.equal(done.length, 2);
            for (const { record } of done) assertRecord(record, model, { stream: record.stream === 1 });
            // the second turn reached the model with the first: question, answer, question
            const turns = upstreamTurns(m.mockOf(model).requests.at(-1)!.body);
            assert.deepEqual(
              turns.map((t) => t.role),
              ["user", "assistant", "user"],
            );
            assert.equal(turns[1]!.text, mockText(3));
            check?.(calls.filter((c) => c.method === "POST"));
          });

        test("a wrong key: the library's typed error, 401", async () => {
          const { client, calls } = await setup(model, "sk-not-a-gateway-key-0123456789");
          const err = await client.plain("Hello").then(
            () => assert.fail("a wrong key was accepted"),
            (e: unknown) => e,
          );
          row.typedError(err, 401);
          assert.deepEqual(
            calls.map((c) => c.status),
            [401],
            "one call, answered 401",
          );
        });

        test("an unknown model: the library's typed error, 404", async () => {
          const { client, calls } = await setup("no-such-model");
          const err = await client.plain("Hello").then(
            () => assert.fail("an unknown model answered"),
            (e: unknown) => e,
          );
          row.typedError(err, 404);
          assert.deepEqual(
            calls.map((c) => c.status),
            [404],
            "one call, answered 404",
          );
        });

        for (const kind of ["plain", "stream"] as const) {
          const bug = row.usageBugs?.[kind];
          test(`usage, ${kind === "plain" ? "not streamed" : "streamed"}${bug ? ` (library bug: ${bug.bug})` : ": the call's usage"}`, async () => {
            const { client, records } = await setup(model);
            const answer = await client[kind](`Count mock:tokens=${kind === "plain" ? 7 : 9}`);
            const [only] = await records();
            const { record, call } = only!;
            assertRecord(record, model, { stream: kind === "stream", output: kind === "plain" ? 7 : 9 });
            assert.equal(Number(record.cached_tokens), 0);
            assert.equal(Number(record.cache_write_tokens), 0);
            const truth = usageOfRecord(record);
            if (!bug) {
              assert.deepEqual(answer.usage, truth, "the library reports the mock's usage, as recorded");
              return;
            }
            const expected = await bug.reports(record, call, upstream.native);
            assert.deepEqual(answer.usage, expected, `what the library reports (${bug.bug})`);
            assert.notDeepEqual(
              answer.usage,
              truth,
              "not the call's usage: when this fails, the library was fixed",
            );
          });
          const workaround = bug?.workaround;
          if (workaround)
            test(`usage, ${kind === "plain" ? "not streamed" : "streamed"}, ${workaround.label}: the call's usage`, async () => {
              const { client, records } = await setup(model, undefined, workaround.client);
              const answer = await client[kind]("Count mock:tokens=9");
              const [only] = await records();
              assertRecord(only!.record, model, { stream: kind === "stream", output: 9 });
              assert.deepEqual(answer.usage, usageOfRecord(only!.record));
            });
        }
      });
    }
  });
}
