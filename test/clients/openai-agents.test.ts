// OpenAI's Agents SDK (@openai/agents) through the gateway, as docs/coding-agents.md sets it up: its
// OpenAI provider on an OpenAI client pointed at the gateway, tracing off, the Responses API
// (the SDK's default). Runs plain and streamed, a function tool the runner executes, an
// agent's `outputType` (a zod schema: text.format json_schema), and a conversation continued
// from `result.history` or, server-managed, from `previousResponseId` (the gateway's store).
import assert from "node:assert/strict";
import { load } from "./install.ts";
import { type Client, clientSuite, TOOL, type WireCall } from "./suite.ts";

const agents = await load("@openai/agents");
const { default: OpenAI, AuthenticationError, NotFoundError } = await load("openai");
const { z } = await load("zod");

agents.setTracingDisabled(true);

clientSuite({
  name: "OpenAI Agents SDK: Responses API",
  packages: ["@openai/agents"],
  api: "responses",
  async client(ctx): Promise<Client> {
    const openAIClient = new OpenAI({
      apiKey: ctx.key,
      baseURL: ctx.baseURL,
      fetch: ctx.fetch,
      maxRetries: 0,
    });
    const runner = new agents.Runner({
      modelProvider: new agents.OpenAIProvider({ openAIClient }),
      tracingDisabled: true,
    });
    const agent = (extra: Record<string, unknown> = {}) =>
      new agents.Agent({ name: "assistant", instructions: "Answer briefly.", model: ctx.model, ...extra });
    const usage = (result: any) => ({
      input: result.state.usage.inputTokens,
      output: result.state.usage.outputTokens,
    });
    async function streamed(a: any, input: unknown): Promise<{ text: string; result: any }> {
      const result = await runner.run(a, input, { stream: true });
      let text = "";
      for await (const piece of result.toTextStream()) text += piece;
      await result.completed;
      if (result.error) throw result.error;
      return { text, result };
    }
    return {
      async plain(prompt) {
        const result = await runner.run(agent(), prompt);
        return { text: result.finalOutput, usage: usage(result) };
      },
      async stream(prompt) {
        const { text, result } = await streamed(agent(), prompt);
        return { text, usage: usage(result) };
      },
      async tools(prompt, stream, run) {
        const lookup = agents.tool({
          name: TOOL.name,
          description: TOOL.description,
          parameters: z.object({ city: z.string() }),
          execute: async ({ city }: { city: string }) => run(city),
        });
        const a = agent({ tools: [lookup] });
        if (stream) return (await streamed(a, prompt)).text;
        return (await runner.run(a, prompt)).finalOutput;
      },
      async structured(prompt) {
        const a = agent({ outputType: z.object({ city: z.string(), population: z.number() }) });
        return (await runner.run(a, prompt)).finalOutput;
      },
      async structuredStream(prompt) {
        const a = agent({ outputType: z.object({ city: z.string(), population: z.number() }) });
        return (await streamed(a, prompt)).result.finalOutput;
      },
      async conversation(turns, variant) {
        const answers: string[] = [];
        let history: any[] = [];
        let previousResponseId: string | undefined;
        for (const turn of turns) {
          const result =
            variant === "previousResponseId"
              ? await runner.run(agent(), turn, previousResponseId ? { previousResponseId } : {})
              : await runner.run(agent(), [...history, agents.user(turn)]);
          history = result.history;
          previousResponseId = result.lastResponseId;
          answers.push(result.finalOutput);
        }
        return answers;
      },
    };
  },
  typedError(err, status) {
    // the OpenAI client's errors, which the runner lets through
    assert.ok(err instanceof (status === 401 ? AuthenticationError : NotFoundError), String(err));
    assert.equal((err as any).status, status);
  },
  structured: [{ variant: "", label: "outputType zod schema: text.format json_schema", via: "schema" }],
  conversations: [
    {
      variant: "history",
      label: "result.history and the next user message",
      check(sent: WireCall[]) {
        assert.equal(sent.at(-1)!.body.previous_response_id, undefined);
      },
    },
    {
      variant: "previousResponseId",
      label: "previousResponseId: the gateway's stored conversation",
      check(sent: WireCall[]) {
        const [first, second] = sent;
        assert.match(second!.body.previous_response_id, /^resp_/);
        assert.equal(second!.body.previous_response_id, `resp_${first!.requestId!.replace(/^req_/, "")}`);
        assert.equal(second!.body.input.length, 1, "only the new question is sent");
      },
    },
  ],
});
