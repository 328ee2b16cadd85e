import assert from "node:assert/strict";
import { test } from "node:test";
import type { ModelEntry, PlanEntry } from "./admin-types.ts";
import {
  deploymentsOf,
  entryPatch,
  fieldOfParam,
  numberOrText,
  parseEntryJson,
  parseList,
  plansIncluding,
  withDeployments,
  withField,
} from "./catalog-edit.ts";

test("an edit sends the fields that changed, and null for those removed", () => {
  const original = {
    id: "m",
    provider: "p",
    pricing: { input: 2, output: 8 },
    owned_by: "acme",
    object: "model",
  };
  const edited = { id: "m", provider: "p", pricing: { input: 3, output: 8 }, fallbacks: ["n"] };
  assert.deepEqual(entryPatch(original, edited), {
    pricing: { input: 3, output: 8 },
    fallbacks: ["n"],
    owned_by: null,
  });
});

test("an unchanged entry is an empty patch, whatever the order of its fields", () => {
  assert.deepEqual(entryPatch({ id: "m", a: { x: 1, y: 2 } }, { a: { y: 2, x: 1 }, id: "m" }), {});
});

test("fields left empty in the form are not sent as changes", () => {
  assert.deepEqual(
    entryPatch({ id: "p", base_url: "http://a" }, { id: "p", base_url: "http://a", api_key_env: undefined }),
    {},
  );
});

test("masked upstream keys are kept by leaving them out; replaced, they are sent", () => {
  const provider = { id: "p", type: "openai-compatible", api_keys: ["…abcd", "…wxyz"] };
  assert.deepEqual(entryPatch(provider, { ...provider, disabled: true }), { disabled: true });
  assert.deepEqual(entryPatch(provider, { ...provider, api_keys: ["sk-new-1"] }), { api_keys: ["sk-new-1"] });
  assert.deepEqual(entryPatch(provider, { id: "p", type: "openai-compatible" }), { api_keys: null });
});

test("a changed list that still holds a masked key is refused before sending", () => {
  const provider = { id: "p", type: "openai-compatible", api_keys: ["…abcd"] };
  assert.throws(() => entryPatch(provider, { ...provider, api_keys: ["…abcd", "sk-new"] }), /masked/);
});

test("an entry's id cannot change", () => {
  assert.throws(() => entryPatch({ id: "a" }, { id: "b" }), /id cannot change/);
});

test("the JSON editor's text must be one object with an id", () => {
  assert.deepEqual(parseEntryJson('{"id":"x","quota_tokens":5}'), { id: "x", quota_tokens: 5 });
  assert.throws(() => parseEntryJson("{"), /not valid/);
  assert.throws(() => parseEntryJson("[1]"), /one object/);
  assert.throws(() => parseEntryJson('{"quota_tokens":5}'), /needs an "id"/);
});

test("an error's param names the entry's field, with or without the catalog's path", () => {
  assert.equal(fieldOfParam("models[0].fallbacks", "models"), "fallbacks");
  assert.equal(fieldOfParam("fallbacks[1]", "models"), "fallbacks");
  assert.equal(fieldOfParam("deployments[0].provider", "models"), "deployments");
  assert.equal(fieldOfParam("plans[2].rate_limits.key.rpm", "plans"), "rate_limits");
  // a plan's own `models` list is not the catalog's models
  assert.equal(fieldOfParam("models[0]", "plans"), "models");
  assert.equal(fieldOfParam("base_url", "providers"), "base_url");
  assert.equal(fieldOfParam(null, "providers"), null);
});

test("a model's deployments, from either shape", () => {
  assert.deepEqual(deploymentsOf({ id: "m", provider: "p", upstream_model: "u" }), [
    { provider: "p", upstream_model: "u" },
  ]);
  assert.deepEqual(deploymentsOf({ id: "m", provider: "p" }), [{ provider: "p" }]);
  const many = [{ provider: "a", weight: 2 }, { provider: "b" }];
  assert.deepEqual(deploymentsOf({ id: "m", deployments: many }), many);
  assert.deepEqual(deploymentsOf({ id: "m" }), []);
});

test("deployments are written in the shape the model had", () => {
  const single: ModelEntry = { id: "m", provider: "p", upstream_model: "u", routing: "weighted" };
  assert.deepEqual(withDeployments(single, [{ provider: "q", upstream_model: "" }]), {
    id: "m",
    routing: "weighted",
    provider: "q",
  });
  assert.deepEqual(withDeployments(single, [{ provider: "p" }, { provider: "q", weight: 3 }]), {
    id: "m",
    routing: "weighted",
    deployments: [{ provider: "p" }, { provider: "q", weight: 3 }],
  });
  // a list of one stays a list; one weighted deployment cannot be the single shape
  const listed: ModelEntry = { id: "m", deployments: [{ provider: "p" }, { provider: "q" }] };
  assert.deepEqual(withDeployments(listed, [{ provider: "p" }]), {
    id: "m",
    deployments: [{ provider: "p" }],
  });
  assert.deepEqual(withDeployments({ id: "m" }, [{ provider: "p", weight: 2 }]), {
    id: "m",
    deployments: [{ provider: "p", weight: 2 }],
  });
  assert.deepEqual(withDeployments({ id: "m" }, [{ provider: "p", weight: 1 }]), { id: "m", provider: "p" });
});

test("which plans include a model", () => {
  const plans: PlanEntry[] = [
    { id: "free", quota_tokens: 1, models: ["a"] },
    { id: "pro", quota_tokens: 2, models: ["a", "b"] },
    { id: "empty", quota_tokens: 3 },
  ];
  assert.deepEqual(plansIncluding("a", plans), ["free", "pro"]);
  assert.deepEqual(plansIncluding("b", plans), ["pro"]);
  assert.deepEqual(plansIncluding("c", plans), []);
});

test("lists and numbers as typed", () => {
  assert.deepEqual(parseList("a, b\nc,, "), ["a", "b", "c"]);
  assert.deepEqual(parseList(""), []);
  assert.equal(numberOrText("1,000,000", true), 1_000_000);
  assert.equal(numberOrText("2.5"), 2.5);
  assert.equal(numberOrText("1,5"), "1,5");
  assert.equal(numberOrText(" "), undefined);
  assert.equal(numberOrText("ten"), "ten");
});

test("a form's field sets a value at its path; left empty, it and emptied objects go", () => {
  const model = { id: "m", pricing: { input: 2 } };
  assert.deepEqual(withField(model, ["pricing", "output"], 8), { id: "m", pricing: { input: 2, output: 8 } });
  assert.deepEqual(withField(model, ["pricing", "input"], undefined), { id: "m" });
  assert.deepEqual(withField(model, ["fallbacks"], []), { id: "m", pricing: { input: 2 } });
  assert.deepEqual(withField({ id: "p" }, ["rate_limits", "key", "rpm"], 5), {
    id: "p",
    rate_limits: { key: { rpm: 5 } },
  });
  // the entry given is not changed
  assert.deepEqual(model, { id: "m", pricing: { input: 2 } });
});
