// The Sessions page in a real browser (the pattern of test/console-e2e.test.ts, kept apart so
// either runs alone): an owner caps a key's sessions in the Keys page, an agent's run and an
// application's x-session-id calls go through /v1, the Sessions page lists them with their
// figures, a session opens as its calls in order with a record's detail, the run that passes
// its cap is refused naming it, and the pages fit 390 px.
import assert from "node:assert/strict";
import { existsSync, mkdirSync } from "node:fs";
import { join } from "node:path";
import { after, before, describe, test } from "node:test";
import OpenAI from "openai";
import type { Browser, Page } from "playwright-core";
import { createUser } from "../src/accounts/users.ts";
import { CONSOLE_DIST } from "../src/http/console-static.ts";
import { loadAgentFixture } from "./agents/fixtures.ts";
import { findChromium } from "./support/chromium.ts";
import { capture, launchChromium, SHOTS, settled, WIDE } from "./support/console-browser.ts";
import { startTestGateway, TEST_MODEL, type TestGateway, testConfig } from "./support/gateway.ts";
import { type MockUpstream, startMockUpstream } from "./support/mock-openai-upstream.ts";

const OWNER = { email: "owner@sessions.test", password: "owner-password-1234" };

describe("the Sessions page in Chromium", { timeout: 120_000 }, () => {
  let upstream: MockUpstream;
  let gw: TestGateway;
  let browser: Browser;
  let page: Page;
  let secret: string;
  let claudeSession: string;
  const pageErrors: string[] = [];

  before(async () => {
    const binary = await findChromium();
    if (!existsSync(join(CONSOLE_DIST, "index.html")))
      throw new Error("The console is not built: run `npm run build:console` first (`npm test` does).");
    mkdirSync(SHOTS, { recursive: true });
    upstream = await startMockUpstream();
    const models = testConfig(upstream).models.map((m) =>
      m.id === TEST_MODEL ? { ...m, pricing: { input: 2, output: 8 } } : m,
    );
    gw = await startTestGateway({ upstream, config: { models } });
    const account = await gw.account("Acme");
    await createUser(gw.gateway.deps.store.db, { account_id: account, role: "owner", ...OWNER });
    secret = (await gw.key(account, { name: "agents" })).secret;
    browser = await launchChromium(binary);
    const context = await browser.newContext({ viewport: WIDE, locale: "en-US" });
    context.setDefaultTimeout(10_000);
    page = await context.newPage();
    page.on("pageerror", (err) => pageErrors.push(err.message));
    page.on("console", (m) => {
      if (m.type() === "error" && /Content Security Policy|Refused to/i.test(m.text()))
        pageErrors.push(m.text());
    });
  });

  after(async () => {
    await browser?.close();
    await gw?.close();
    await upstream?.close();
  });

  test("the owner caps each session of the key in the Keys page", async () => {
    await page.goto(`${gw.origin}/console/`);
    await page.getByLabel("E-mail").fill(OWNER.email);
    await page.getByLabel("Password").fill(OWNER.password);
    await page.getByRole("button", { name: "Sign in" }).click();
    await page.getByRole("heading", { level: 1, name: "Overview" }).waitFor();
    await page.getByRole("navigation", { name: "Console" }).getByRole("link", { name: "Keys" }).click();
    await settled(page);
    const row = page.getByRole("row").filter({ hasText: "agents" });
    assert.match(await row.innerText(), /no cap/);
    await row.getByRole("button", { name: /^Edit/ }).click();
    const edit = page.getByRole("dialog", { name: /^Edit key/ });
    await edit.getByLabel("Per-session token cap").fill("0");
    await edit.getByRole("button", { name: "Save" }).click();
    await edit
      .getByRole("alert")
      .filter({ hasText: /above 0/ })
      .waitFor();
    // the Claude Code run below holds far more than this: its next call is refused
    await edit.getByLabel("Per-session token cap").fill("40,000");
    await edit.getByLabel("Per-session budget (USD)").fill("2.5");
    await edit.getByRole("button", { name: "Save" }).click();
    await page.getByRole("status").filter({ hasText: "saved" }).waitFor();
    await page.getByRole("row").filter({ hasText: "40,000 tokens" }).waitFor();
    assert.match(await row.innerText(), /\$2\.5/);
  });

  test("the sessions' calls go through /v1; the one past its cap is refused naming it", async () => {
    const client = new OpenAI({ baseURL: gw.baseURL, apiKey: secret, maxRetries: 0 });
    for (let i = 0; i < 3; i++)
      await client.chat.completions.create(
        { model: TEST_MODEL, messages: [{ role: "user", content: `step ${i}` }] },
        { headers: { "x-session-id": "nightly-build" } },
      );
    const fixture = loadAgentFixture("claude-code", "default-json.turn-1");
    claudeSession = fixture.headers["x-claude-code-session-id"]!;
    const res = await fetch(`${gw.origin}${fixture.path}`, {
      method: "POST",
      headers: { ...fixture.headers, authorization: `Bearer ${secret}` },
      body: JSON.stringify({ ...fixture.body, model: TEST_MODEL }),
    });
    const body = (await res.json()) as { error?: { message: string; details: { error_code: string } } };
    assert.equal(res.status, 429);
    assert.equal(body.error?.details.error_code, "session_limit_exceeded");
    assert.match(body.error!.message, /per-session limit of 40000 tokens/);
  });

  test("the Sessions page lists them, the latest first, with their figures", async () => {
    await page.getByRole("navigation", { name: "Console" }).getByRole("link", { name: "Sessions" }).click();
    await settled(page);
    const rows = page.locator("tr[data-session-id]");
    await rows.first().waitFor();
    assert.deepEqual(await rows.evaluateAll((trs) => trs.map((tr) => (tr as any).dataset.sessionId)), [
      claudeSession,
      "nightly-build",
    ]);
    const nightly = page.locator('tr[data-session-id="nightly-build"]');
    const text = await nightly.innerText();
    assert.match(text, /x-session-id/);
    assert.match(text, new RegExp(TEST_MODEL));
    assert.match(text, /\b3\b/);
    const claude = await page.locator(`tr[data-session-id="${claudeSession}"]`).innerText();
    assert.match(claude, /Claude Code/);
    assert.match(claude, /1 not ok/);
    await capture(page, null, "sessions");
  });

  test("a session opens as its calls in the order they were made, each with its detail", async () => {
    await page.getByRole("link", { name: "nightly-build" }).click();
    await settled(page);
    await page.getByRole("heading", { name: "Its calls, in the order they were made" }).waitFor();
    assert.match(await page.locator('dd[data-field="Calls"]').innerText(), /^3$/);
    const calls = page.locator("tr[data-request-id]");
    assert.equal(await calls.count(), 3);
    const ids = await calls.evaluateAll((trs) => trs.map((tr) => (tr as any).dataset.requestId as string));
    const times = await Promise.all(ids.map(async (id) => (await gw.record(id)).created_at));
    assert.deepEqual(
      times,
      [...times].sort((a, b) => a - b),
      "oldest first",
    );
    const exported = await page.getByRole("link", { name: "Export CSV" }).getAttribute("href");
    assert.equal(exported, "/api/console/sessions/nightly-build/export?format=csv");
    await page.getByRole("button", { name: `Details of ${ids[0]}` }).click();
    const detail = page.getByRole("dialog", { name: "Call record" });
    assert.match(await detail.locator('dd[data-field="Session"]').innerText(), /nightly-build/);
    await page.keyboard.press("Escape");
    await capture(page, null, "session");
  });

  test("the pages ran without script errors or policy violations", () => {
    assert.deepEqual(pageErrors, []);
  });
});
