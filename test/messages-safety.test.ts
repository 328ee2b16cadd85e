// Content safety on the Messages API, with the rules reviewer, on each kind of upstream: a
// streamed request is a reviewed stream unless the operator chose JSON (then it is answered
// with the non-streamed message, reviewed first); flagged output is withheld as an ordinary
// turn whose text is the gateway's notice (end_turn, the safety extension, charged); thinking
// is output and is reviewed too; reviewed streaming holds back what a review flags and still
// ends in Anthropic's sequence; a flagged prompt is refused in Anthropic's envelope.
import assert from "node:assert/strict";
import { after, before, describe, test } from "node:test";
import { BadRequestError } from "@anthropic-ai/sdk";
import { withheldNotice } from "../src/safety/withheld.ts";
import {
  failing,
  type MessagesGateway,
  startMessagesGateway,
  UPSTREAMS,
} from "./support/messages-gateway.ts";
import { parseNamedStream } from "./support/stream-assertions.ts";

/** a word the rules reviewer blocks */
const BLOCKED = "forbidden";
/** the 7th of the mocks' reply words: an answer of 12 is flagged part way through */
const LATE_WORD = "from";

let env: MessagesGateway;
let secret: string;
let liveSecret: string;
let jsonSecret: string;

before(async () => {
  const models = [...UPSTREAMS.flatMap((u) => [u.model, failing(u.model)]), "demo"];
  env = await startMessagesGateway({
    config: {
      plans: [
        { id: "default", quota_tokens: 1_000_000_000, models },
        { id: "live", quota_tokens: 1_000_000_000, models, safety: { streaming: "reviewed" as const } },
        // the operator's explicit choice of the spec's JSON answer to a stream
        { id: "json", quota_tokens: 1_000_000_000, models, safety: { streaming: "json" as const } },
      ],
      safety: {
        enabled: true,
        review_input: true,
        timeout_ms: 5_000,
        segment_tokens: 4,
        // this suite withholds many answers of one key on purpose
        withheld_limit: { max: 1_000 },
        reviewers: [
          {
            type: "rules" as const,
            terms: [BLOCKED, LATE_WORD, "think", "card number"],
            category: "blocked_terms",
          },
        ],
      },
    },
  });
  secret = (await env.gw.key(await env.gw.account("safe"))).secret;
  liveSecret = (await env.gw.key(await env.gw.account("live", { plan: "live" }))).secret;
  jsonSecret = (await env.gw.key(await env.gw.account("json", { plan: "json" }))).secret;
});

after(async () => {
  await env?.close();
});

const post = (body: unknown, key = secret) =>
  fetch(`${env.gw.origin}/v1/messages`, {
    method: "POST",
    headers: { "content-type": "application/json", "x-api-key": key },
    body: JSON.stringify(body),
  });

for (const { kind, model, label } of UPSTREAMS) {
  describe(label, () => {
    test("a streamed request is a reviewed stream when nobody chose the mode", async () => {
      const res = await post({
        model,
        max_tokens: 50,
        stream: true,
        messages: [{ role: "user", content: "hi mock:tokens=3" }],
      });
      assert.equal(res.status, 200);
      assert.match(res.headers.get("content-type")!, /^text\/event-stream/);
      assert.equal(res.headers.get("x-content-safety-stream"), "reviewed");
      const events = parseNamedStream(await res.text());
      assert.equal(events.at(-1)!.event, "message_stop");
      const row = await env.gw.record(res.headers.get("request-id")!);
      assert.equal(row.safety_mode, "reviewed");
      assert.equal(row.safety_verdict, "pass");
    });

    test("a streamed request is answered with the whole message, reviewed first, when the operator chose json", async () => {
      const res = await post(
        {
          model,
          max_tokens: 50,
          stream: true,
          messages: [{ role: "user", content: "hi mock:tokens=3" }],
        },
        jsonSecret,
      );
      assert.equal(res.status, 200);
      assert.match(res.headers.get("content-type")!, /^application\/json/);
      assert.equal(res.headers.get("x-content-safety"), "on");
      assert.equal(res.headers.get("x-content-safety-stream"), "json");
      const body = (await res.json()) as any;
      assert.equal(body.type, "message");
      assert.equal(body.content.at(-1).text, "Hello world this");
      const row = await env.gw.record(res.headers.get("request-id")!);
      assert.equal(row.api, "messages");
      assert.equal(Number(row.stream), 1);
      assert.equal(row.safety_mode, "json");
      assert.equal(row.safety_verdict, "pass");
      if (kind === "anthropic") assert.equal(env.mocks.anthropic.requests.at(-1)!.body.stream, undefined);
    });

    test("flagged output is withheld: the gateway's notice as an ordinary turn, the safety extension, usage charged", async () => {
      const { data: answer, request_id } = await env
        .anthropic(secret)
        .messages.create({
          model,
          max_tokens: 50,
          messages: [{ role: "user", content: "say it mock:tokens=12" }],
        })
        .withResponse();
      assert.deepEqual(answer.content, [{ type: "text", text: withheldNotice(request_id!) }]);
      // not `refusal`, which Claude Code shows as Anthropic's usage policy
      assert.equal(answer.stop_reason, "end_turn");
      assert.deepEqual((answer as unknown as { safety: unknown }).safety, {
        verdict: "flagged",
        stage: "output",
        categories: ["blocked_terms"],
      });
      assert.equal(answer.usage.output_tokens, 12);
    });

    test("reviewed streaming: a flag part way holds back the rest; the stream still ends as Anthropic's does", async () => {
      const res = await post(
        { model, max_tokens: 50, stream: true, messages: [{ role: "user", content: "long mock:tokens=12" }] },
        liveSecret,
      );
      assert.equal(res.status, 200);
      assert.equal(res.headers.get("x-content-safety-stream"), "reviewed");
      const events = parseNamedStream(await res.text());
      const types = events.map((e) => e.event).filter((t) => t !== "ping");
      assert.match(
        types.join(" "),
        /^message_start( content_block_start( content_block_delta)* content_block_stop)* message_delta message_stop$/,
      );
      const text = events
        .filter((e) => e.event === "content_block_delta" && e.data.delta.type === "text_delta")
        .map((e) => e.data.delta.text)
        .join("");
      assert.equal(text.includes(LATE_WORD), false, "the flagged segment never reached the client");
      assert.ok(text.endsWith(withheldNotice(res.headers.get("request-id")!)), "the notice ends the text");
      const delta = events.find((e) => e.event === "message_delta")!.data;
      assert.equal(delta.delta.stop_reason, "end_turn");
      assert.deepEqual(delta.safety.categories, ["blocked_terms"]);
      const row = await env.gw.record(res.headers.get("request-id")!);
      assert.equal(row.status, "content_filter");
      assert.equal(row.safety_mode, "reviewed");
    });

    test("a flagged prompt is refused in Anthropic's envelope, nothing sent upstream", async () => {
      const before = env.mockOf(model).requests.length;
      const err = await env
        .anthropic(secret)
        .messages.create({
          model,
          max_tokens: 50,
          messages: [{ role: "user", content: "my card number is 4111" }],
        })
        .then(
          () => assert.fail("the prompt should be refused"),
          (e: unknown) => e,
        );
      assert.ok(err instanceof BadRequestError);
      assert.equal(err.type, "invalid_request_error");
      assert.equal(err.errorCode, "content_filter");
      assert.equal(env.mockOf(model).requests.length, before);
    });
  });
}

test("thinking is output: a native answer's thinking is reviewed and withheld with the rest", async () => {
  const { data: answer, request_id } = await env
    .anthropic(secret)
    .messages.create({
      model: "claude",
      max_tokens: 4000,
      thinking: { type: "enabled", budget_tokens: 1024 },
      messages: [{ role: "user", content: "ponder mock:tokens=2" }],
    })
    .withResponse();
  assert.deepEqual(
    answer.content,
    [{ type: "text", text: withheldNotice(request_id!) }],
    "the mock thinks 'Let me think.'",
  );
  assert.equal(answer.stop_reason, "end_turn");
});
