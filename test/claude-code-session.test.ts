// A Claude Code-like session end to end (test/sessions/claude-code.json): a long system prompt
// with cache_control, tool definitions with the last one marked, thinking, the betas Claude
// Code asks for, and several rounds of tool_use / tool_result, streamed through
// @anthropic-ai/sdk's beta Messages API as Claude Code calls it. Against the Anthropic mock
// (native): every cache_control marker and every signed thinking block reaches the upstream
// unchanged, the betas but the denied (oauth) are forwarded, and the prompt cache shows in usage, records
// and charges. Against the translated upstreams the same session completes, charged as their
// usage says. In each case the records add up to the counters.
import assert from "node:assert/strict";
import { readFileSync } from "node:fs";
import { after, before, describe, test } from "node:test";
import type Anthropic from "@anthropic-ai/sdk";
import type {
  BetaContentBlockParam,
  BetaMessage,
  BetaMessageParam,
} from "@anthropic-ai/sdk/resources/beta/messages";
import { DEFAULT_DENIED } from "../src/providers/anthropic/config.ts";
import { denies } from "../src/providers/passthrough.ts";
import { type MessagesGateway, startMessagesGateway, UPSTREAMS } from "./support/messages-gateway.ts";
import { thinkingSignature } from "./support/mock-anthropic-upstream.ts";

interface Session {
  headers: Record<string, string>;
  request: Record<string, any>;
  first_user: BetaContentBlockParam[];
  tool_results: { content: string | BetaContentBlockParam[]; reminder: string }[];
}
const SESSION: Session = JSON.parse(
  readFileSync(new URL("./sessions/claude-code.json", import.meta.url), "utf8"),
);
const EPHEMERAL = { type: "ephemeral" } as const;

/** Claude Code marks the last block of the newest turn for caching, and no older one. */
function withMarker(blocks: BetaContentBlockParam[]): BetaContentBlockParam[] {
  return blocks.map((b, i) =>
    i === blocks.length - 1 ? ({ ...b, cache_control: EPHEMERAL } as BetaContentBlockParam) : b,
  );
}
const unmarked = (m: BetaMessageParam): BetaMessageParam =>
  Array.isArray(m.content)
    ? ({ ...m, content: m.content.map(({ cache_control: _c, ...b }: any) => b) } as BetaMessageParam)
    : m;

interface Round {
  /** the messages the client sent */
  messages: BetaMessageParam[];
  answer: BetaMessage;
  requestId: string;
}

/** Plays the session on `model`: each round streamed, the answer sent back as it came. */
async function play(client: Anthropic, model: string): Promise<Round[]> {
  const { "anthropic-beta": betas, ...headers } = SESSION.headers;
  const rounds: Round[] = [];
  let history: BetaMessageParam[] = [];
  let next: BetaMessageParam = { role: "user", content: withMarker(SESSION.first_user) };
  for (let i = 0; i <= SESSION.tool_results.length; i++) {
    const messages: BetaMessageParam[] = [...history.map(unmarked), next];
    const stream: ReturnType<Anthropic["beta"]["messages"]["stream"]> = client.beta.messages.stream(
      { model, ...SESSION.request, messages, stream: true, betas: betas!.split(",") } as never,
      { headers },
    );
    const answer: BetaMessage = await stream.finalMessage();
    rounds.push({ messages, answer, requestId: stream.request_id! });
    if (i === SESSION.tool_results.length) break;
    const use = answer.content.find((b) => b.type === "tool_use");
    assert.ok(use && use.type === "tool_use", `round ${i + 1} asks for a tool`);
    const result = SESSION.tool_results[i]!;
    history = [...messages, { role: "assistant", content: answer.content as BetaContentBlockParam[] }];
    next = {
      role: "user",
      content: withMarker([
        { type: "tool_result", tool_use_id: use.id, content: result.content } as BetaContentBlockParam,
        { type: "text", text: result.reminder },
      ]),
    };
  }
  return rounds;
}

let env: MessagesGateway;

before(async () => {
  env = await startMessagesGateway();
});

after(async () => {
  await env?.close();
});

/** The records of the key add up to its counters, and every round was charged what its usage says. */
async function assertCharged(keyId: string, rounds: Round[]): Promise<void> {
  let total = 0;
  for (const { answer, requestId } of rounds) {
    const row = await env.gw.record(requestId);
    assert.equal(row.api, "messages");
    assert.equal(row.status, "ok");
    const u = answer.usage;
    const prompt = u.input_tokens + (u.cache_creation_input_tokens ?? 0) + (u.cache_read_input_tokens ?? 0);
    assert.equal(Number(row.prompt_tokens), prompt, "the prompt is input and both cache figures");
    assert.equal(Number(row.cached_tokens), u.cache_read_input_tokens ?? 0);
    assert.equal(Number(row.cache_write_tokens), u.cache_creation_input_tokens ?? 0);
    assert.equal(Number(row.completion_tokens), u.output_tokens);
    total += prompt + u.output_tokens;
  }
  const recorded = await env.gw.recorded("key_id", keyId);
  assert.equal(recorded.calls, rounds.length);
  assert.equal(recorded.tokens, total);
  assert.equal((await env.gw.ledger("key", keyId))?.used, total, "the ledger charged what the records say");
  const stored = await env.gw.gateway.deps.store.db
    .selectFrom("api_keys")
    .select("used_tokens")
    .where("id", "=", keyId)
    .executeTakeFirstOrThrow();
  assert.equal(Number(stored.used_tokens), total, "the key's stored counter too");
}

describe("native, to the Anthropic upstream", () => {
  let rounds: Round[];
  let keyId: string;

  before(async () => {
    const key = await env.gw.key(await env.gw.account("claude-code"));
    keyId = key.id;
    env.mocks.anthropic.reset();
    rounds = await play(env.anthropic(key.secret), "claude");
  });

  test("three rounds: two tool uses, each after signed thinking, then the answer", () => {
    assert.equal(rounds.length, 3);
    for (const { answer } of rounds.slice(0, 2)) {
      assert.deepEqual(
        answer.content.map((b) => b.type),
        ["thinking", "tool_use"],
      );
      const thinking = answer.content[0]!;
      assert.ok(thinking.type === "thinking");
      assert.equal(thinking.signature, thinkingSignature(thinking.thinking));
    }
    const last = rounds[2]!.answer;
    assert.deepEqual(
      last.content.map((b) => b.type),
      ["thinking", "text"],
    );
    assert.equal(last.stop_reason, "end_turn");
  });

  test("the upstream got every request as the client sent it: cache_control markers where they stood, thinking signed", () => {
    const received = env.mocks.anthropic.requests;
    assert.equal(received.length, rounds.length);
    rounds.forEach(({ messages }, i) => {
      const body = received[i]!.body;
      assert.deepEqual(body.system, SESSION.request.system, "system blocks and their markers");
      assert.deepEqual(body.tools, SESSION.request.tools, "tools, the last one marked");
      assert.deepEqual(body.messages, messages, "every block, marker and signature");
      assert.deepEqual(body.thinking, SESSION.request.thinking);
      assert.deepEqual(body.metadata, SESSION.request.metadata);
      assert.equal(body.max_tokens, SESSION.request.max_tokens);
      assert.equal(body.model, "claude-sonnet-4-5");
      assert.equal(body.stream, true);
    });
    const markers = received.map((r) => JSON.stringify(r.body).split('"cache_control"').length - 1);
    assert.deepEqual(markers, [4, 4, 4], "two system blocks, the last tool, the newest turn");
  });

  test("the betas but those the provider denies are forwarded; the gateway's key and version, never the client's headers", () => {
    const asked = SESSION.headers["anthropic-beta"]!.split(",");
    const allowed = asked.filter((b) => !denies(DEFAULT_DENIED, b));
    assert.deepEqual(allowed, [
      "claude-code-20250219",
      "interleaved-thinking-2025-05-14",
      "fine-grained-tool-streaming-2025-05-14",
      "effort-2025-11-24",
    ]);
    for (const r of env.mocks.anthropic.requests) {
      assert.equal(r.headers["anthropic-beta"], allowed.join(","));
      assert.equal(r.headers["anthropic-version"], "2023-06-01");
      assert.equal(r.headers["x-api-key"], "sk-ant-test-0123456789");
      assert.equal(r.headers["x-app"], undefined);
      assert.equal(r.headers["anthropic-dangerous-direct-browser-access"], undefined);
    }
  });

  test("the prompt cache: written on the first round, read on the next ones; input_tokens without it", () => {
    const [first, second, third] = rounds.map((r) => r.answer.usage);
    assert.ok(first!.cache_creation_input_tokens! > 500, "the system prompt and tools written");
    assert.equal(first!.cache_read_input_tokens, 0);
    assert.ok(
      second!.cache_read_input_tokens! >= first!.cache_creation_input_tokens!,
      "round 1's prefix read",
    );
    assert.ok(third!.cache_read_input_tokens! > second!.cache_read_input_tokens!, "and round 2's");
    for (const u of [first, second, third])
      assert.ok(u!.input_tokens < 100, "input_tokens leaves the cache out");
  });

  test("charged as the usage says, cache reads and writes included; records add up to the counters", async () => {
    await assertCharged(keyId, rounds);
  });
});

for (const { kind, model, label } of UPSTREAMS.filter((u) => u.kind !== "anthropic"))
  describe(`translated, to the ${label}`, () => {
    test("the session completes; what the canonical request cannot carry stays here; charged as the upstream counted", async () => {
      const key = await env.gw.key(await env.gw.account(`claude-code-${kind}`));
      const mock = env.mockOf(model);
      mock.reset();
      const rounds = await play(env.anthropic(key.secret), model);
      assert.equal(rounds.length, 3);
      assert.equal(rounds[2]!.answer.stop_reason, "end_turn");
      assert.equal(mock.requests.length, 3);
      for (const r of mock.requests) {
        const text = JSON.stringify(r.body);
        assert.equal(text.includes("cache_control"), false, "markers are Anthropic's");
        assert.equal(text.includes("signature"), false, "thinking is Anthropic's");
        assert.equal(r.headers["anthropic-beta"], undefined);
      }
      if (kind === "openai") {
        // reasoning came back as thinking (without a signature) and stayed here
        assert.equal(rounds[0]!.answer.content[0]!.type, "thinking");
        assert.equal(mock.requests[2]!.body.reasoning_effort, "low");
        const sent = mock.requests[2]!.body.messages;
        assert.equal(sent[0].role, "system");
        assert.deepEqual(
          sent.map((m: { role: string }) => m.role),
          ["system", "user", "assistant", "tool", "user", "assistant", "tool", "user"],
        );
      } else {
        // Gemini's thought signatures travel in the tool ids, and came back with the results
        const calls = rounds.slice(0, 2).map((r) => r.answer.content.find((b) => b.type === "tool_use")!);
        for (const c of calls) assert.match((c as { id: string }).id, /_ts_/);
      }
      for (const { answer } of rounds) {
        assert.equal(answer.usage.cache_creation_input_tokens, 0);
        assert.ok(answer.usage.input_tokens > 500, "the whole prompt, uncached, every round");
      }
      await assertCharged(key.id, rounds);
    });
  });
