// LlamaIndex TS through the gateway: @llamaindex/openai's OpenAI LLM (chat completions) with
// @llamaindex/core's tools. chat, chat streamed, a tool round trip with `exec` (the LLM's tool
// loop: the application calls it again with the new messages until no tool is called),
// streamed too, `responseFormat` with a zod schema (response_format json_schema), and a
// conversation as the chat messages the application keeps. The packages are marked deprecated
// on npm ("no longer maintained"); the umbrella `llamaindex` package still depends on them.
import assert from "node:assert/strict";
import { load } from "./install.ts";
import { type Client, type ClientContext, classChain, clientSuite, TOOL } from "./suite.ts";

const { OpenAI } = await load("@llamaindex/openai");
const { tool } = await load("@llamaindex/core/tools");
const { z } = await load("zod");

const schema = () => z.object({ city: z.string(), population: z.number() });

function llamaindexClient(ctx: ClientContext, additionalChatOptions?: Record<string, unknown>): Client {
  const llm = new OpenAI({
    model: ctx.model,
    apiKey: ctx.key,
    baseURL: ctx.baseURL,
    maxRetries: 0,
    additionalSessionOptions: { fetch: ctx.fetch },
    ...(additionalChatOptions ? { additionalChatOptions } : {}),
  });
  const usage = (u: any) => (u ? { input: u.prompt_tokens, output: u.completion_tokens } : undefined);
  return {
    async plain(prompt) {
      const r = await llm.chat({ messages: [{ role: "user", content: prompt }] });
      return { text: r.message.content, usage: usage(r.raw.usage) };
    },
    async stream(prompt) {
      const chunks = await llm.chat({ messages: [{ role: "user", content: prompt }], stream: true });
      let text = "";
      let reported: any;
      for await (const chunk of chunks) {
        text += chunk.delta;
        reported = chunk.raw?.usage ?? reported;
      }
      return { text, usage: usage(reported) };
    },
    async tools(prompt, stream, run) {
      const lookup = tool({
        name: TOOL.name,
        description: TOOL.description,
        parameters: z.object({ city: z.string() }),
        execute: ({ city }: { city: string }) => run(city),
      });
      const messages: any[] = [{ role: "user", content: prompt }];
      let text = "";
      for (let round = 0; round < 3; round++) {
        if (stream) {
          const r = await llm.exec({ messages, tools: [lookup], stream: true });
          text = "";
          for await (const chunk of r.stream) text += chunk.delta;
          messages.push(...r.newMessages());
          if (!r.toolCalls.length) return text;
        } else {
          const r = await llm.exec({ messages, tools: [lookup] });
          messages.push(...r.newMessages);
          if (!r.toolCalls.length) return messages.at(-1).content;
        }
      }
      throw new Error("the model kept calling the tool");
    },
    async structured(prompt) {
      const r = await llm.chat({ messages: [{ role: "user", content: prompt }], responseFormat: schema() });
      return schema().parse(JSON.parse(r.message.content));
    },
    async structuredStream(prompt) {
      const chunks = await llm.chat({
        messages: [{ role: "user", content: prompt }],
        responseFormat: schema(),
        stream: true,
      });
      let text = "";
      for await (const chunk of chunks) text += chunk.delta;
      return schema().parse(JSON.parse(text));
    },
    async conversation(turns) {
      const messages: any[] = [];
      const answers: string[] = [];
      for (const turn of turns) {
        messages.push({ role: "user", content: turn });
        const r = await llm.chat({ messages });
        messages.push(r.message);
        answers.push(r.message.content);
      }
      return answers;
    },
  };
}

clientSuite({
  name: "LlamaIndex TS, @llamaindex/openai OpenAI: chat completions",
  packages: ["@llamaindex/openai", "@llamaindex/core"],
  api: "chat.completions",
  client: async (ctx) => llamaindexClient(ctx),
  typedError(err, status) {
    // the errors of the OpenAI SDK it embeds (its own copy, openai 5)
    const chain = classChain(err);
    assert.ok(chain.includes(status === 401 ? "AuthenticationError" : "NotFoundError"), chain.join(" < "));
    assert.equal((err as any).status, status);
  },
  structured: [
    { variant: "", label: "chat responseFormat zod schema: response_format json_schema", via: "schema" },
  ],
  conversations: [{ variant: "", label: "the chat messages kept by the application" }],
  usageBugs: {
    stream: {
      // its streamChat sends no stream_options, and OpenAI (and the gateway) send a stream's
      // usage only to who asks for it (include_usage)
      bug: "OpenAI.streamChat does not ask for the stream's usage (stream_options.include_usage) and reports none",
      reports: async () => undefined,
      workaround: {
        label: "additionalChatOptions stream_options include_usage",
        client: async (ctx) => llamaindexClient(ctx, { stream_options: { include_usage: true } }),
      },
    },
  },
});
