// Claude Code, the pinned release (./versions.json), through the gateway's Messages API: to an
// Anthropic upstream natively and to a chat completions upstream translated, printing its
// result as one JSON document or as its event stream, with content safety off and reviewed
// (streamed: Claude Code always streams), with a model the user names (ANTHROPIC_MODEL, as
// docs/coding-agents.md says) and with Claude Code's own default model. See ./suite.ts for what a cell
// checks. Run by `npm run test:agents`, which installs the client first.
import { defineClientSuite, matrix } from "./suite.ts";

defineClientSuite({
  client: "claude-code",
  title: "Claude Code",
  api: "messages",
  own: "anthropic",
  namedModel: "claude-gateway",
  outputLabel: { result: "json", events: "stream-json" },
  cells: [
    ...matrix({
      model: ["named"],
      upstream: ["anthropic", "chat"],
      output: ["result", "events"],
      safety: ["off", "reviewed"],
    }),
    ...matrix({ model: ["default"], upstream: ["anthropic", "chat"], output: ["events"], safety: ["off"] }),
  ],
});
