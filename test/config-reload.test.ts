// SIGHUP reloads the configuration file (docs/health.md): the gateway as an operator runs it
// (`node src/main.ts serve`, GATEWAY_CONFIG), the file changed under it, the signal sent, and
// the openai SDK as the client. A valid file is applied to new calls, a call in flight ends on
// the configuration it started with, an invalid file leaves the running one in place and the
// log says why, and settings that need a restart are named and kept.
import assert from "node:assert/strict";
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { after, before, describe, it } from "node:test";
import OpenAI, { APIError } from "openai";
import { firstKey, type Running, serve, stdoutLine } from "./support/main-process.ts";
import { type MockUpstream, startMockUpstream } from "./support/mock-openai-upstream.ts";
import { until } from "./support/stream-assertions.ts";

const UPSTREAM_KEY = "sk-upstream-reload-4b1d9e";
const HEADER_SECRET = "hdr-s3cret-91c2";

describe("SIGHUP", () => {
  let dir: string;
  let file: string;
  let upstream: MockUpstream;
  let gw: Running;
  let client: OpenAI;

  /** The configuration file with these public models, all on the default plan (or `planModels`). */
  const write = (models: string[], extra: string[] = [], planModels = models) =>
    writeFileSync(
      file,
      [
        ...extra,
        "providers:",
        "  - id: mock",
        "    type: openai-compatible",
        `    base_url: ${upstream.url}`,
        "    api_key_env: MOCK_UPSTREAM_KEY",
        "    headers:",
        `      x-upstream-secret: ${HEADER_SECRET}`,
        "models:",
        ...models.flatMap((id) => [`  - id: ${id}`, "    provider: mock", "    upstream_model: mock-model"]),
        "plans:",
        "  - id: default",
        "    quota_tokens: 1000000",
        `    models: [${planModels.join(", ")}]`,
      ].join("\n"),
    );

  /** Sends SIGHUP and resolves with the reload's outcome line. */
  async function reload(outcome: RegExp): Promise<any> {
    const from = gw.stdout.length;
    gw.child.kill("SIGHUP");
    return JSON.parse(await stdoutLine(gw, outcome, from));
  }

  const chat = (model: string, content = "hi mock:tokens=3") =>
    client.chat.completions.create({ model, messages: [{ role: "user", content }] });

  async function notFound(model: string): Promise<void> {
    await assert.rejects(chat(model), (err: unknown) => {
      assert.ok(err instanceof APIError);
      assert.equal(err.status, 404);
      assert.equal(err.code, "model_not_found");
      return true;
    });
  }

  before(async () => {
    dir = mkdtempSync(join(tmpdir(), "gw-reload-"));
    file = join(dir, "gateway.yaml");
    upstream = await startMockUpstream();
    write(["first"]);
    gw = await serve({ GATEWAY_DATA_DIR: dir, GATEWAY_CONFIG: file, MOCK_UPSTREAM_KEY: UPSTREAM_KEY });
    client = new OpenAI({ baseURL: `${gw.url}/v1`, apiKey: await firstKey(gw), maxRetries: 0 });
  });
  after(async () => {
    if (gw && gw.child.exitCode === null) {
      gw.child.kill("SIGTERM");
      await gw.exit;
    }
    await upstream?.close();
    rmSync(dir, { recursive: true, force: true });
  });

  it("a model added to the file is served once the gateway got SIGHUP, and one line says what changed", async () => {
    assert.ok((await chat("first")).choices[0]!.message.content);
    await notFound("second");
    write(["first", "second"]);
    const line = await reload(/"msg":"configuration reloaded/);
    assert.equal(line.level, 30);
    assert.equal(line.source, file);
    assert.deepEqual(line.models, { added: ["second"] });
    assert.deepEqual(line.plans, { changed: ["default"] });
    assert.equal(line.providers, undefined, "the provider did not change");
    assert.ok((await chat("second")).choices[0]!.message.content);
    const listed = [];
    for await (const m of client.models.list()) listed.push(m.id);
    assert.deepEqual(listed.sort(), ["first", "second"]);
  });

  it("an invalid file: the running configuration stays, and the log names the problem", async () => {
    write(["first", "second"], ["plans:", "  - id: nope"]); // `plans` twice: YAML refuses
    const broken = await reload(/"msg":"the configuration was not reloaded/);
    assert.equal(broken.level, 50);
    assert.match(broken.problems.join("\n"), /gateway\.yaml: line \d+, column \d+: .*/);

    write(["first"], [], ["first", "ghost"]); // valid YAML, a plan naming a model that is not there
    const invalid = await reload(/"msg":"the configuration was not reloaded/);
    assert.equal(invalid.level, 50);
    assert.deepEqual(invalid.problems, [`${file}: plans[0].models[1]: unknown model "ghost"`]);

    // still the configuration of the last good reload: both models
    assert.ok((await chat("second")).choices[0]!.message.content);
    assert.equal(gw.child.exitCode, null, "SIGHUP did not end the process");
  });

  it("settings that need a restart are named in one warning and keep their running values", async () => {
    write(["first", "second"], ["server:", "  shutdown_grace_ms: 1234", "store:", "  records_commit_ms: 5"]);
    const from = gw.stdout.length;
    const done = await reload(/"msg":"configuration reloaded/);
    assert.equal(done.level, 30);
    const warning = JSON.parse(await stdoutLine(gw, /"msg":"these settings changed/, from));
    assert.equal(warning.level, 40);
    assert.deepEqual(warning.settings.sort(), ["server.shutdown_grace_ms", "store.records_commit_ms"]);
    assert.ok((await chat("first")).choices[0]!.message.content, "still serving, where it listened");
  });

  it("a call in flight across a reload ends on the configuration it started with; new calls get the new one", async () => {
    const inFlight = chat("second", "slow mock:latency=1500 mock:tokens=4");
    await until(() => upstream.inFlight() === 1, "the call reached the upstream");
    write(["first"]); // `second` removed
    const line = await reload(/"msg":"configuration reloaded/);
    assert.deepEqual(line.models, { removed: ["second"] });
    assert.equal(upstream.inFlight(), 1, "the call is still in flight");
    await notFound("second");
    const answer = await inFlight;
    assert.equal(answer.model, "second");
    assert.ok(answer.choices[0]!.message.content);
    assert.ok((await chat("first")).choices[0]!.message.content);
  });

  it("no secret of the file or the environment reaches the log", () => {
    assert.ok(!gw.stdout.includes(UPSTREAM_KEY));
    assert.ok(!gw.stdout.includes(HEADER_SECRET));
  });
});
