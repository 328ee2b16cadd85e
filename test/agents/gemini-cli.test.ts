// Gemini CLI, the pinned release (./versions.json), through the gateway's Gemini API: pointed at
// it with GOOGLE_GEMINI_BASE_URL and the gateway key as GEMINI_API_KEY (docs/coding-agents.md,
// "Gemini CLI"), to a Gemini upstream natively and translated to a chat completions upstream
// and to an Anthropic one, printing its JSON result or its event stream (`-o stream-json`),
// with content safety off and reviewed (Gemini CLI always streams), with a model the user names
// (`--model`) and with Gemini CLI's own default, where it first asks a small model
// (gemini-3.5-flash-lite, structured output) which of its models the prompt needs. See
// ./suite.ts for what a cell checks. Run by `npm run test:agents`, which installs the client first.
import { defineClientSuite, matrix } from "./suite.ts";

defineClientSuite({
  client: "gemini-cli",
  title: "Gemini CLI",
  api: "gemini",
  own: "gemini",
  namedModel: "gemini-gateway",
  outputLabel: { result: "json", events: "stream-json" },
  cells: [
    ...matrix({
      model: ["named"],
      upstream: ["gemini", "chat", "anthropic"],
      output: ["result", "events"],
      safety: ["off", "reviewed"],
    }),
    // its default model's router asks for JSON of a schema, which the Gemini mock answers as a
    // model does and the other mocks' agent mode does not
    ...matrix({ model: ["default"], upstream: ["gemini"], output: ["events"], safety: ["off"] }),
  ],
});
