// Mastra (@mastra/core) through the gateway: an Agent whose model is an AI SDK model,
// @ai-sdk/openai's `openai(model)` on the gateway (the Responses API). generate and stream, a
// tool made with createTool that the agent runs, `structuredOutput` with a zod schema, and a
// conversation passed as the messages the application keeps (the earlier answers as Mastra
// returns them in `response.messages`, sent back as item_reference items by the AI SDK).
import assert from "node:assert/strict";
import { load } from "./install.ts";
import { type Client, clientSuite, TOOL, type WireCall } from "./suite.ts";

(globalThis as any).AI_SDK_LOG_WARNINGS = false;

const { Agent } = await load("@mastra/core/agent");
const { createTool } = await load("@mastra/core/tools");
const { noopLogger } = await load("@mastra/core/logger");
const ai = await load("ai");
const { createOpenAI } = await load("@ai-sdk/openai");
const { z } = await load("zod");

clientSuite({
  name: "Mastra, Agent with an AI SDK openai(model): Responses API",
  packages: ["@mastra/core", "@ai-sdk/openai"],
  api: "responses",
  async client(ctx): Promise<Client> {
    const model = createOpenAI({ baseURL: ctx.baseURL, apiKey: ctx.key, fetch: ctx.fetch })(ctx.model);
    const agent = (tools: Record<string, unknown> = {}) => {
      const a = new Agent({
        id: "assistant",
        name: "assistant",
        instructions: "Answer briefly.",
        model,
        tools,
        maxRetries: 0,
      });
      // it logs every upstream error besides throwing it
      a.__setLogger(noopLogger);
      return a;
    };
    const usage = (u: any) => ({ input: u.inputTokens, output: u.outputTokens });
    async function streamed(a: any, input: unknown): Promise<{ text: string; result: any }> {
      const result = await a.stream(input);
      let text = "";
      for await (const piece of result.textStream) text += piece;
      if (result.error) throw result.error;
      return { text, result };
    }
    return {
      async plain(prompt) {
        const result = await agent().generate(prompt);
        if (result.error) throw result.error;
        return { text: result.text, usage: usage(result.usage) };
      },
      async stream(prompt) {
        const { text, result } = await streamed(agent(), prompt);
        return { text, usage: usage(await result.usage) };
      },
      async tools(prompt, stream, run) {
        const lookup = createTool({
          id: TOOL.name,
          description: TOOL.description,
          inputSchema: z.object({ city: z.string() }),
          execute: async ({ city }: { city: string }) => run(city),
        });
        const a = agent({ [TOOL.name]: lookup });
        if (stream) return (await streamed(a, prompt)).text;
        return (await a.generate(prompt)).text;
      },
      async structured(prompt) {
        const result = await agent().generate(prompt, {
          structuredOutput: { schema: z.object({ city: z.string(), population: z.number() }) },
        });
        return result.object;
      },
      async structuredStream(prompt) {
        const result = await agent().stream(prompt, {
          structuredOutput: { schema: z.object({ city: z.string(), population: z.number() }) },
        });
        for await (const _piece of result.textStream) {
        }
        if (result.error) throw result.error;
        return result.object;
      },
      async conversation(turns) {
        const messages: any[] = [];
        const answers: string[] = [];
        for (const turn of turns) {
          messages.push({ role: "user", content: turn });
          const result = await agent().generate(messages);
          messages.push(...result.response.messages);
          answers.push(result.text);
        }
        return answers;
      },
    };
  },
  typedError(err, status) {
    // the AI SDK's error, which the agent lets through
    assert.ok(ai.APICallError.isInstance(err), `an APICallError, not ${String(err)}`);
    assert.equal((err as any).statusCode, status);
  },
  structured: [{ variant: "", label: "structuredOutput zod schema: text.format json_schema", via: "schema" }],
  conversations: [
    {
      variant: "",
      label: "response.messages sent back: item_reference items",
      check(sent: WireCall[]) {
        const second = sent.at(-1)!.body.input as any[];
        assert.ok(
          second.some((item) => item.type === "item_reference"),
          JSON.stringify(second),
        );
      },
    },
  ],
});
