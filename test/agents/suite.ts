// The conformance suite of one client (./claude-code.test.ts, ./codex.test.ts,
// ./gemini-cli.test.ts): first the
// client against the scripted model directly (the baseline: the mock speaks the client's own
// API, so the loop must complete; the requests it sent are the fixtures, recorded or compared),
// then each cell of the matrix through a gateway of its own: an upstream kind, the client's
// output mode, content safety off or reviewed, the model named by the user or the client's
// default. A cell passes when the agent loop completed through the gateway (every request
// accepted, the tool run, the final answer printed) and the records match the mock's usage.
import assert from "node:assert/strict";
import { existsSync } from "node:fs";
import { after, before, describe, test } from "node:test";
import {
  agentFixtureNames,
  clearFixtures,
  fixtureDir,
  inventory,
  loadAgentFixture,
  modelOf,
  newNames,
  scrubber,
  toFixture,
  writeFixtures,
  writeInventory,
} from "./fixtures.ts";
import {
  type AgentGateway,
  agentKey,
  apiExchanges,
  assertCompleted,
  assertRecordsMatch,
  cleanup,
  type Mocks,
  mockOf,
  type OutputMode,
  runClient,
  type SafetyMode,
  startAgentGateway,
  startAgentMocks,
  UPSTREAM_LABEL,
  type UpstreamKind,
} from "./harness.ts";
import { binOf, type ClientName, versionOf } from "./install.ts";
import { type Recorder, startRecorder } from "./recorder.ts";

export interface Cell {
  upstream: UpstreamKind;
  output: OutputMode;
  safety: SafetyMode;
  /** the model the user names (a public model of the plan), or the client's default */
  model: "named" | "default";
}

export interface ClientSuite {
  client: ClientName;
  /** the client's name in test titles */
  title: string;
  /** the client API the gateway serves it on, as records name it */
  api: string;
  /** the kind of upstream that speaks the client's API (the baseline's mock) */
  own: UpstreamKind;
  /** the public model the user names (the `named` fixtures) */
  namedModel: string;
  /** how an output mode is spelt on the client's command line, for titles */
  outputLabel: Record<OutputMode, string>;
  cells: readonly Cell[];
}

/** Every combination of the given values. */
export function matrix(axes: {
  upstream: readonly UpstreamKind[];
  output: readonly OutputMode[];
  safety: readonly SafetyMode[];
  model: readonly Cell["model"][];
}): Cell[] {
  return axes.model.flatMap((model) =>
    axes.upstream.flatMap((upstream) =>
      axes.output.flatMap((output) => axes.safety.map((safety) => ({ upstream, output, safety, model }))),
    ),
  );
}

const recording = process.env.AGENTS_RECORD === "1";

export function defineClientSuite(s: ClientSuite): void {
  const version = versionOf(s.client);
  let mocks: Mocks;
  let direct: Recorder;
  /**
   * the models the client asks for when none is set, as the baseline saw them (Gemini CLI asks
   * a small model which of its models a prompt needs, then that one)
   */
  let defaultModels: string[] = [];

  before(async () => {
    assert.ok(
      existsSync(binOf(s.client)),
      `${s.title} ${version} is not installed: run \`npm run test:agents\` (it installs the pinned clients first)`,
    );
    if (recording) clearFixtures(s.client);
    mocks = await startAgentMocks();
    direct = await startRecorder(mockOf(mocks, s.own).url.replace(/\/v1$/, ""));
  });

  after(async () => {
    await direct?.close();
    await mocks?.openai.close();
    await mocks?.anthropic.close();
    await mocks?.gemini.close();
  });

  describe(`${s.title} ${version} against the scripted model directly (its requests: the fixtures)`, () => {
    for (const model of ["default", "named"] as const)
      for (const output of ["result", "events"] as const) {
        // the fixtures' name: the model and the output mode as the client's flag spells it
        const variant = `${model}-${s.outputLabel[output].replace(/^-+/, "")}`;
        test(`${model === "default" ? "its default model" : `a model the user names (${s.namedModel})`}, ${s.outputLabel[output]} output: the loop completes (${variant})`, async (t) => {
          direct.reset();
          const mock = mockOf(mocks, s.own);
          mock.reset();
          const key = "sk-direct-0123456789";
          const run = await runClient({
            client: s.client,
            origin: direct.url,
            key,
            model: model === "named" ? s.namedModel : undefined,
            output,
          });
          try {
            const sent = apiExchanges(direct.exchanges);
            const models = [...new Set(sent.flatMap((e) => modelOf(e) ?? []))];
            if (model === "default") defaultModels = models;
            t.diagnostic(`${sent.length} requests in ${run.ms} ms; models ${models.join(", ")}`);
            t.diagnostic(`first request: ${sent[0]?.bytes} bytes`);
            assertCompleted(run, direct.exchanges, output, s.client);
            const scrub = scrubber(run, key);
            const fixtures = sent.map((e, i) =>
              toFixture(e, { client: s.client, variant, turn: i + 1 }, scrub),
            );
            if (recording) {
              writeFixtures(s.client, variant, fixtures);
              writeInventory(s.client);
              t.diagnostic(`recorded ${fixtures.length} requests in ${fixtureDir(s.client)}`);
              return;
            }
            // A new release shows here first: the names its requests use that the fixtures have not.
            const names = agentFixtureNames(s.client).filter((n) => n.startsWith(`${variant}.`));
            if (!names.length) {
              t.diagnostic(
                `no fixtures of ${s.title} ${version}: record them with npm run test:agents -- --record`,
              );
              return;
            }
            const added = newNames(
              inventory(fixtures),
              inventory(names.map((n) => loadAgentFixture(s.client, n))),
            );
            if (Object.keys(added).length)
              t.diagnostic(
                `sent names the fixtures have not (re-record with npm run test:agents -- --record): ${JSON.stringify(added)}`,
              );
          } finally {
            cleanup(run);
          }
        });
      }
  });

  describe(`${s.title} ${version} through the gateway`, () => {
    for (const cell of s.cells) {
      const title = [
        cell.model === "default" ? "its default model" : `model ${s.namedModel}`,
        `${UPSTREAM_LABEL[cell.upstream]}${cell.upstream === s.own ? " (native)" : " (translated)"}`,
        `${s.outputLabel[cell.output]} output`,
        `safety ${cell.safety}`,
      ].join(", ");
      test(title, async (t) => {
        const models = cell.model === "named" ? [s.namedModel] : defaultModels;
        assert.ok(models.length, "the baseline did not find the client's default model");
        let env: AgentGateway | undefined;
        try {
          env = await startAgentGateway(mocks, Object.fromEntries(models.map((m) => [m, cell.upstream])));
          const key = await agentKey(env.gw, cell.safety, `${s.client}-${cell.upstream}`);
          const mock = mockOf(mocks, cell.upstream);
          mock.reset();
          const run = await runClient({
            client: s.client,
            origin: env.front.url,
            key: key.secret,
            model: cell.model === "named" ? s.namedModel : undefined,
            output: cell.output,
          });
          try {
            t.diagnostic(`${apiExchanges(env.front.exchanges).length} requests in ${run.ms} ms`);
            assertCompleted(run, env.front.exchanges, cell.output, s.client);
            await assertRecordsMatch(env.gw, key.id, mock, env.front.exchanges, s.api, cell.safety);
          } finally {
            cleanup(run);
          }
        } finally {
          await env?.close();
        }
      });
    }
  });
}
