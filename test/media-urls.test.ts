// Image and file URLs a client hands an upstream to fetch (second audit, item 6): chat
// completions and Responses forwarded `http://169.254.169.254/…`, `http://127.0.0.1:6379/`,
// `file:///etc/passwd` and `gopher://…`; Messages forwarded both http URLs. A self-hosted
// upstream that fetches images (vLLM) could be steered into its own network. Now one rule on
// every API: https: and data: pass, http: only where the operator allows it, other schemes
// never, literal inward addresses only where the operator allows them; refused with 400 naming
// the part, before anything is sent.
import assert from "node:assert/strict";
import { after, before, describe, test } from "node:test";
import { mediaUrlProblem } from "../src/apis/media-urls.ts";
import { type MessagesGateway, startMessagesGateway } from "./support/messages-gateway.ts";

const BAD = [
  "http://169.254.169.254/latest/meta-data/iam/security-credentials/",
  "http://127.0.0.1:6379/",
  "file:///etc/passwd",
  "gopher://127.0.0.1:6379/_INFO",
  "https://[::1]/a.png",
  "https://2130706433/a.png", // 127.0.0.1 written as a number
  "https://10.0.0.5/a.png",
  "https://localhost/a.png",
  "https://[::ffff:127.0.0.1]/a.png",
];
const GOOD = "https://example.com/cat.png";

let env: MessagesGateway;
let key: string;

before(async () => {
  env = await startMessagesGateway();
  key = (await env.gw.key(await env.gw.account("media"))).secret;
});
after(() => env?.close());

async function post(path: string, body: unknown, headers: Record<string, string> = {}) {
  const res = await fetch(`${env.gw.origin}${path}`, {
    method: "POST",
    headers: { "content-type": "application/json", authorization: `Bearer ${key}`, ...headers },
    body: JSON.stringify(body),
  });
  return {
    status: res.status,
    body: (await res.json()) as { error: { message: string; param?: string; details?: { param?: string } } },
  };
}

const chat = (url: string) =>
  post("/v1/chat/completions", {
    model: "gpt-test",
    messages: [
      {
        role: "user",
        content: [
          { type: "text", text: "what? mock:tokens=1" },
          { type: "image_url", image_url: { url } },
        ],
      },
    ],
  });
const responses = (url: string) =>
  post("/v1/responses", {
    model: "gpt-test",
    input: [
      {
        role: "user",
        content: [
          { type: "input_text", text: "what? mock:tokens=1" },
          { type: "input_image", image_url: url },
        ],
      },
    ],
  });
const messages = (url: string, model = "claude") =>
  post("/v1/messages", {
    model,
    max_tokens: 10,
    messages: [
      {
        role: "user",
        content: [
          { type: "text", text: "what? mock:tokens=1" },
          { type: "image", source: { type: "url", url } },
        ],
      },
    ],
  });

describe("every API, the same rule", () => {
  for (const [api, send, param] of [
    ["chat completions", chat, "messages[0].content[1].image_url.url"],
    ["Responses", responses, "input[0].content[1].image_url"],
    ["Messages (native)", (u: string) => messages(u), "messages[0].content[1].source.url"],
    ["Messages (translated)", (u: string) => messages(u, "gpt-test"), "messages[0].content[1].source.url"],
  ] as const)
    test(`${api}: inward addresses and other schemes are refused naming the part; nothing is sent`, async () => {
      const sent = () => Object.values(env.mocks).reduce((n, m) => n + m.requests.length, 0);
      const before = sent();
      for (const url of BAD) {
        const answer = await send(url);
        assert.equal(answer.status, 400, `${url}: ${JSON.stringify(answer.body)}`);
        assert.equal(answer.body.error.param ?? answer.body.error.details?.param, param, url);
        assert.match(answer.body.error.message, /https: or data: URL|loopback, link-local or private/, url);
      }
      assert.equal(sent(), before, "no upstream was asked");
      const ok = await send(GOOD);
      assert.equal(ok.status, 200, JSON.stringify(ok.body));
    });
});

test("the rule itself: http only when allowed, inward hosts only when allowed, data: always", () => {
  const strict = { allow_http: false, allow_private_hosts: false };
  assert.equal(mediaUrlProblem("data:image/png;base64,AAAA", strict), undefined);
  assert.equal(mediaUrlProblem("https://example.com/a.png", strict), undefined);
  assert.match(mediaUrlProblem("http://example.com/a.png", strict)!, /plain http/);
  assert.equal(mediaUrlProblem("http://example.com/a.png", { ...strict, allow_http: true }), undefined);
  assert.match(mediaUrlProblem("https://192.168.1.4/a.png", strict)!, /private/);
  assert.equal(
    mediaUrlProblem("https://192.168.1.4/a.png", { ...strict, allow_private_hosts: true }),
    undefined,
  );
  assert.equal(mediaUrlProblem("https://172.32.0.1/a.png", strict), undefined, "outside 172.16/12");
  assert.match(mediaUrlProblem("https://[fe80::1]/a.png", strict)!, /private/);
  assert.match(mediaUrlProblem("ftp://example.com/a.png", strict)!, /https: or data:/);
  assert.match(mediaUrlProblem("not a url", strict)!, /not a URL/);
});
