// The requests the real Claude Code, Codex CLI and Gemini CLI sent (recorded by `npm run
// test:agents -- --record`, test/fixtures/agents/), through each edge without the clients: every one is
// accepted, and what a translation cannot carry is exactly what is listed for a notice. The
// suite that runs the clients takes minutes; these take milliseconds and name the construct
// when a re-recorded release sends something the edges handle differently.
import assert from "node:assert/strict";
import { describe, test } from "node:test";
import {
  canonicalRequest as geminiCanonical,
  generateContentSchema,
  parseBody as parseGemini,
} from "../src/apis/gemini/request.ts";
import {
  canonicalRequest,
  checkMessages,
  messagesRequestSchema,
  parseBody,
} from "../src/apis/messages/request.ts";
import { parseResponsesRequest } from "../src/apis/responses/request.ts";
import { builtinToolUses, toChatRequest } from "../src/apis/responses/to-chat.ts";
import { agentFixtureNames, loadAgentFixture } from "./agents/fixtures.ts";

describe("Claude Code's recorded requests on /v1/messages", () => {
  const names = agentFixtureNames("claude-code");
  test("there are recorded requests to check", () => assert.ok(names.length >= 4, names.join(", ")));
  for (const name of names)
    test(name, () => {
      const fixture = loadAgentFixture("claude-code", name);
      assert.match(fixture.path, /^\/v1\/messages(\?beta=true)?$/);
      const req = parseBody(messagesRequestSchema, fixture.body);
      checkMessages(req);
      const { request, untranslated } = canonicalRequest(req);
      const body = fixture.body as Record<string, any>;
      // mid-conversation system turns stay system messages, in their place
      const systemTurns = (body.messages as Array<{ role: string }>).filter(
        (m) => m.role === "system",
      ).length;
      assert.equal(
        request.messages.filter((m, i) => m.role === "system" && i > 0).length,
        systemTurns,
        "each mid-conversation system turn is a system message",
      );
      // thinking becomes a reasoning effort (for models that reason: capabilities)
      if (body.thinking && body.thinking.type !== "disabled") assert.ok(request.reasoning_effort, "thinking");
      assert.equal(request.tools?.length, (body.tools as unknown[]).length, "every tool is a client tool");
      // what only Anthropic takes: named by place, nothing else
      const names = untranslated.map((u) => u.name).sort();
      const expected = [
        ...(body.context_management ? ["context_management"] : []),
        ...(body.tools as Array<Record<string, unknown>>).flatMap((t) =>
          Object.keys(t).filter((k) => !["name", "description", "input_schema", "cache_control"].includes(k)),
        ),
      ].sort();
      assert.deepEqual(names, expected);
    });
});

describe("Codex CLI's recorded requests on /v1/responses", () => {
  const names = agentFixtureNames("codex");
  test("there are recorded requests to check", () => assert.ok(names.length >= 4, names.join(", ")));
  for (const name of names)
    test(name, () => {
      const fixture = loadAgentFixture("codex", name);
      assert.equal(fixture.path, "/v1/responses");
      const req = parseResponsesRequest(fixture.body);
      const { request, untranslated } = toChatRequest(req);
      const body = fixture.body as Record<string, any>;
      const flat = (request.tools ?? []).map((t) => {
        const tool = t as unknown as { function?: { name: string }; custom?: { name: string } };
        return tool.function?.name ?? tool.custom?.name;
      });
      // namespace tools (in `tools`, or in an additional_tools item) are flattened
      const namespaces = [
        ...(body.tools ?? []),
        ...(body.input as Array<Record<string, any>>).flatMap((i) =>
          i.type === "additional_tools" ? i.tools : [],
        ),
      ].filter((t: Record<string, unknown>) => t.type === "namespace");
      assert.ok(namespaces.length > 0, "Codex sends namespace tools");
      for (const ns of namespaces)
        for (const inner of ns.tools)
          assert.ok(flat.includes(`${ns.name}__${inner.name}`), `${ns.name}.${inner.name}`);
      // built-in tools are listed for notices, not refused
      const builtin = builtinToolUses(req).map((u) => u.type);
      for (const tool of body.tools ?? [])
        if (!["function", "custom", "namespace"].includes(tool.type))
          assert.ok(builtin.includes(tool.type), tool.type);
      // client_metadata and the like: known to no chat completion, listed by name
      for (const field of Object.keys(body))
        if (field === "client_metadata")
          assert.ok(
            untranslated.some((u) => u.name === field),
            field,
          );
    });
});

describe("Gemini CLI's recorded requests on /v1beta/models/{model}:…", () => {
  const names = agentFixtureNames("gemini-cli");
  test("there are recorded requests to check", () => assert.ok(names.length >= 4, names.join(", ")));
  for (const name of names)
    test(name, () => {
      const fixture = loadAgentFixture("gemini-cli", name);
      const path = /^\/v1beta\/models\/([^:]+):(generateContent|streamGenerateContent\?alt=sse)$/.exec(
        fixture.path,
      );
      assert.ok(path, fixture.path);
      const req = parseGemini(generateContentSchema, fixture.body);
      const { request, untranslated } = geminiCanonical(req, path[1]!, path[2] !== "generateContent");
      const body = fixture.body as Record<string, any>;
      const declared = (body.tools ?? []).flatMap(
        (t: { functionDeclarations?: unknown[] }) => t.functionDeclarations ?? [],
      );
      assert.equal(request.tools?.length ?? 0, declared.length, "every declaration is a function tool");
      // what only Gemini takes: its sampling's topK, nothing else
      assert.deepEqual(
        untranslated.map((u) => u.param),
        body.generationConfig?.topK === undefined ? [] : ["generationConfig.topK"],
      );
      // its router asks for JSON of a schema
      if (body.generationConfig?.responseJsonSchema)
        assert.equal(request.response_format?.type, "json_schema");
      // every function response answers a call of the turn before it (by its id)
      for (const m of request.messages)
        if (m.role === "tool") assert.match(m.tool_call_id, /^run_shell_command_/);
    });
});
