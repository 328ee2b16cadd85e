import assert from "node:assert/strict";
import { test } from "node:test";
import { type BuiltinToolUse, builtinAllowed, withoutDisallowedTools } from "./builtin-tools.ts";

const use = (type: string, param = "tools[0]"): BuiltinToolUse => ({ type, param });

test("a tool is allowed by its name; a dated type is its tool; an item needs one of the tools that make it", () => {
  assert.equal(builtinAllowed(use("web_search"), new Set(["web_search"])), true);
  assert.equal(builtinAllowed(use("file_search"), new Set(["web_search"])), false);
  assert.equal(builtinAllowed(use("web_search_preview_2025_03_11"), new Set(["web_search_preview"])), true);
  assert.equal(builtinAllowed(use("web_search_call", "input[2]"), new Set(["web_search_preview"])), true);
  assert.equal(builtinAllowed(use("web_search_call", "input[2]"), new Set(["web_search"])), true);
  assert.equal(builtinAllowed(use("web_search_call", "input[2]"), new Set(["file_search"])), false);
  assert.equal(builtinAllowed(use("tool_search_call", "input[1]"), new Set(["tool_search"])), true);
  assert.equal(
    builtinAllowed(use("quantum_oracle"), new Set(["web_search"])),
    false,
    "an unknown type is never allowed",
  );
});

test("a native body keeps the allowed tools and loses the others, and a tool_choice naming one; items stay", () => {
  const body = {
    tools: [{ type: "web_search" }, { type: "function", name: "f" }, { type: "file_search" }],
    tool_choice: { type: "file_search" },
    input: [{ type: "file_search_call", id: "fs" }],
  };
  const uses = [
    use("web_search"),
    use("file_search", "tools[2]"),
    use("file_search", "tool_choice"),
    use("file_search_call", "input[0]"),
  ];
  const { body: out, removed } = withoutDisallowedTools(body, uses, new Set(["web_search"]));
  assert.deepEqual(out.tools, [{ type: "web_search" }, { type: "function", name: "f" }]);
  assert.equal("tool_choice" in out, false);
  assert.deepEqual(out.input, body.input);
  assert.deepEqual(
    removed.map((u) => u.param),
    ["tools[2]", "tool_choice"],
  );
  assert.equal(body.tools.length, 3, "the client's body is not changed");
  const all = withoutDisallowedTools(body, [use("web_search")], new Set(["web_search"]));
  assert.equal(all.body, body, "nothing to remove: the same body");
});
