import assert from "node:assert/strict";
import { describe, test } from "node:test";
import { sanitizeUpstreamMessage as sanitize } from "./sanitize.ts";

/** The message is cleaned and none of the sensitive parts survive. */
function assertRemoved(message: string, secrets: string[]): string {
  const out = sanitize(message);
  for (const s of secrets)
    assert.ok(!out.includes(s), `${JSON.stringify(s)} survived in ${JSON.stringify(out)}`);
  return out;
}

describe("sanitizeUpstreamMessage", () => {
  describe("URLs", () => {
    test("http(s) URLs are replaced, the text around them kept", () => {
      const out = assertRemoved(
        "Incorrect API key. You can find your API key at https://platform.openai.com/account/api-keys.",
        ["platform.openai.com", "https://", "api-keys"],
      );
      assert.match(out, /^Incorrect API key\. You can find your API key at \[url\]/);
    });

    test("URLs with credentials, ports, paths and queries are replaced whole", () => {
      const out = assertRemoved("proxy http://admin:hunter2@10.0.0.7:3128/path?token=abc failed", [
        "admin",
        "hunter2",
        "10.0.0.7",
        "3128",
        "token=abc",
      ]);
      assert.equal(out, "proxy [url] failed");
    });

    test("other schemes are replaced too", () => {
      assert.equal(sanitize("cannot reach redis://cache.internal:6379/0 now"), "cannot reach [url] now");
      assert.equal(sanitize("see postgres://u:p@db:5432/x"), "see [url]");
      assert.equal(sanitize("ws://x.y/z closed"), "[url] closed");
    });

    test("a URL inside quotes or parentheses stops at the delimiter", () => {
      assert.equal(sanitize('endpoint "http://a.b/c" refused'), 'endpoint "[url]" refused');
      assert.equal(sanitize("upstream (https://a.b/c) refused"), "upstream ([url]) refused");
    });
  });

  describe("addresses", () => {
    test("IPv4 addresses with and without ports are replaced", () => {
      assert.equal(sanitize("connect ECONNREFUSED 10.1.2.3:8443"), "connect ECONNREFUSED [host]");
      assert.equal(sanitize("host 192.168.0.1 is down"), "host [host] is down");
      assertRemoved("backends 172.16.5.4:80, 172.16.5.5:81 failed", ["172.16", ":80", ":81"]);
    });

    test("internal host names with ports are replaced", () => {
      assert.equal(sanitize("upstream at llm.internal:9000 failed"), "upstream at [host] failed");
      assert.equal(sanitize("gpu-box.local refused"), "[host] refused");
      assert.equal(sanitize("router.lan:8080 timed out"), "[host] timed out");
    });

    test("IPv6 addresses with and without ports are replaced", () => {
      // Node writes connection errors like "connect ECONNREFUSED fd00::12:8080"; a proxy in
      // front of the model may write "[fd00::12]:8080". Both are the upstream's address.
      assertRemoved("connect ECONNREFUSED [fd00:1234::12]:8080", ["fd00", "1234::12"]);
      assertRemoved("connect ECONNREFUSED 2001:db8:85a3::8a2e:370:7334 port 443", [
        "2001:db8",
        "8a2e:370:7334",
      ]);
    });
  });

  describe("keys and tokens", () => {
    test("sk-… keys are replaced, including project keys", () => {
      const key = "sk-ABCdef1234567890abcdefghijklmnopqrstuvwxyz012";
      assert.equal(
        sanitize(`Incorrect API key provided: ${key}.`),
        "Incorrect API key provided: [redacted].",
      );
      assertRemoved("key sk-proj-abcdefghijklmnopqrstuvwxyz0123456789ABCDEFGHIJ is invalid", [
        "abcdefghij",
        "sk-proj",
      ]);
      assertRemoved("api key=sk-ABCdef1234567890 rejected", ["ABCdef1234567890"]);
    });

    test("short sk- keys (well under the long-token length) are replaced", () => {
      assertRemoved("bad key sk-abc123XYZ here", ["abc123XYZ"]);
      assertRemoved("bad key sk_live_abc123XYZ here", ["abc123XYZ"]);
    });

    test("Bearer tokens are replaced, whatever the case of the scheme", () => {
      assert.equal(
        sanitize("Authorization: Bearer abc.def.ghi was rejected"),
        "Authorization: [redacted] was rejected",
      );
      assertRemoved("bearer eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiIxIn0.c2lnbmF0dXJl failed", [
        "eyJhbGciOiJIUzI1NiJ9",
        "eyJzdWIiOiIxIn0",
        "c2lnbmF0dXJl",
      ]);
      assertRemoved("BEARER short1 denied", ["short1"]);
    });

    test("long opaque tokens are replaced", () => {
      const token = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdef0123";
      assert.equal(sanitize(`token ${token} expired`), "token [redacted] expired");
      assertRemoved(`session ${"a1b2".repeat(16)} invalid`, ["a1b2a1b2"]);
      assertRemoved(`hash ${"f".repeat(64)}`, ["ffffffff"]);
    });

    test("several secrets in one message are all removed", () => {
      const out = assertRemoved(
        "key sk-1234567890abcdef at https://up.example/v1 via 10.0.0.1:443 with Bearer xyz123 and 0123456789abcdef0123456789abcdef",
        ["1234567890abcdef", "up.example", "10.0.0.1", "xyz123", "0123456789abcdef0123456789abcdef"],
      );
      assert.match(out, /^key \[redacted\] at \[url\] via \[host\] with \[redacted\] and \[redacted\]$/);
    });
  });

  describe("ordinary text", () => {
    test("typical upstream messages pass unchanged", () => {
      for (const m of [
        "The model `gpt-4o-mini` does not exist or you do not have access to it.",
        "This model's maximum context length is 8192 tokens. However, your messages resulted in 9000 tokens.",
        "Rate limit reached for requests. Please try again in 20s.",
        "Invalid value for 'temperature': expected a number between 0 and 2.",
        "Unsupported parameter: 'max_tokens' is not supported with this model. Use 'max_completion_tokens' instead.",
        "messages[0].content: must be a string",
        "Ünïcödé text — with dashes, 中文 and emoji 😀 stays.",
      ])
        assert.equal(sanitize(m), m);
    });

    test("words that merely start like key prefixes are kept", () => {
      assert.equal(sanitize("skip the task, keep the token count"), "skip the task, keep the token count");
    });

    test("whitespace runs collapse to one space and the ends are trimmed", () => {
      assert.equal(sanitize("  a b  c\n\nd\t e  "), "a b c d e");
    });

    test("an empty message stays empty", () => {
      assert.equal(sanitize(""), "");
      assert.equal(sanitize("   \n "), "");
    });
  });

  describe("length", () => {
    test("long messages are cut to 300 characters plus an ellipsis", () => {
      const out = sanitize("word ".repeat(500));
      assert.equal(out.length, 301);
      assert.ok(out.endsWith("…"));
      assert.ok(out.startsWith("word word word"));
    });

    test("messages up to the bound are not cut", () => {
      const m = "a ".repeat(150).trim(); // 299 characters
      assert.equal(sanitize(m), m);
      const exact = `${m}b`; // 300
      assert.equal(sanitize(exact), exact);
    });

    test("the bound applies after redaction, and redaction happens before the cut", () => {
      const key = "sk-ABCdef1234567890abcdefghijklmnopqrstuvwxyz012";
      const out = sanitize(`${"x ".repeat(140)}${key} ${"y ".repeat(200)}`);
      assert.ok(out.length <= 301);
      assert.ok(!out.includes("ABCdef1234567890"));
      assert.ok(out.includes("[redacted]"));
    });

    test("a huge message is bounded", () => {
      const out = sanitize("a".repeat(31).concat(" ").repeat(10_000));
      assert.ok(out.length <= 301);
    });
  });
});
