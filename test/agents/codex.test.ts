// Codex CLI, the pinned release (./versions.json), through the gateway's Responses API: to a
// Responses upstream natively, translated to a chat completions upstream and to an Anthropic
// one, printing its last message or its event stream (--json), with content safety off and
// reviewed (streamed: Codex always streams), with a model the user names in config.toml (as
// docs/coding-agents.md says: a name Codex does not know, so it uses its fallback model settings) and
// with Codex's own default model (a name it knows: its tools then come in an additional_tools
// item and its shell runs through a JavaScript `exec` tool). See ./suite.ts for what a cell
// checks. Run by `npm run test:agents`, which installs the client first.
import { defineClientSuite, matrix } from "./suite.ts";

defineClientSuite({
  client: "codex",
  title: "Codex CLI",
  api: "responses",
  own: "responses",
  namedModel: "gpt-gateway",
  outputLabel: { result: "text", events: "--json" },
  cells: [
    ...matrix({
      model: ["named"],
      upstream: ["responses", "chat", "anthropic"],
      output: ["result", "events"],
      safety: ["off", "reviewed"],
    }),
    ...matrix({
      model: ["default"],
      upstream: ["responses", "chat", "anthropic"],
      output: ["events"],
      safety: ["off"],
    }),
  ],
});
