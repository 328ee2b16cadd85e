import assert from "node:assert/strict";
import { test } from "node:test";
import { diffJson, showValue } from "./audit-diff.ts";

test("an edit shows the leaves that changed, by their path", () => {
  const before = { id: "gpt", pricing: { input: 2, output: 8 }, fallbacks: ["a"], owned_by: "x" };
  const after = { id: "gpt", pricing: { input: 3, output: 8 }, fallbacks: ["a", "b"], routing: "ordered" };
  assert.deepEqual(diffJson(before, after), [
    { path: "pricing.input", kind: "changed", before: 2, after: 3 },
    { path: "fallbacks[1]", kind: "added", before: undefined, after: "b" },
    { path: "owned_by", kind: "removed", before: "x", after: undefined },
    { path: "routing", kind: "added", before: undefined, after: "ordered" },
  ]);
});

test("the order of an object's fields is no change", () => {
  assert.deepEqual(diffJson({ a: 1, b: { c: 2, d: 3 } }, { b: { d: 3, c: 2 }, a: 1 }), []);
});

test("a created resource lists every field added, a deleted one every field removed", () => {
  assert.deepEqual(diffJson(null, { id: "p", quota_tokens: 5 }), [
    { path: "id", kind: "added", before: undefined, after: "p" },
    { path: "quota_tokens", kind: "added", before: undefined, after: 5 },
  ]);
  assert.deepEqual(
    diffJson({ id: "p" }, null).map((c) => [c.path, c.kind]),
    [["id", "removed"]],
  );
});

test("an object added or removed shows as its leaves", () => {
  assert.deepEqual(
    diffJson({ id: "m" }, { id: "m", pricing: { input: 2, output: 8 } }).map((c) => [
      c.path,
      c.kind,
      c.after,
    ]),
    [
      ["pricing.input", "added", 2],
      ["pricing.output", "added", 8],
    ],
  );
  assert.deepEqual(
    diffJson(null, { id: "p", rate_limits: { key: { rpm: 5 } } }).map((c) => c.path),
    ["id", "rate_limits.key.rpm"],
  );
  assert.deepEqual(
    diffJson({ a: { b: 1 } }, {}).map((c) => [c.path, c.kind]),
    [["a.b", "removed"]],
  );
  // an empty object has no leaves: it shows whole
  assert.deepEqual(diffJson({}, { headers: {} }), [
    { path: "headers", kind: "added", before: undefined, after: {} },
  ]);
});

test("a value replaced by one of another type is one change", () => {
  assert.deepEqual(diffJson({ a: { b: 1 } }, { a: [1] }), [
    { path: "a", kind: "changed", before: { b: 1 }, after: [1] },
  ]);
  assert.deepEqual(diffJson(1, 2), [{ path: "", kind: "changed", before: 1, after: 2 }]);
});

test("values read as one line", () => {
  assert.equal(showValue(undefined), "–");
  assert.equal(showValue("text"), "text");
  assert.equal(showValue(null), "null");
  assert.equal(showValue({ a: [1, "x"] }), '{"a":[1,"x"]}');
});
