// The console's pages for operators (issue #30) end to end in a real browser, the same
// harness as console-e2e.test.ts: Chromium driven by playwright-core, against a real gateway
// whose catalog is kept in the store (`catalog.source: store`, upstream keys encrypted under
// GATEWAY_SECRET_KEY) in front of two mock upstreams, one of which refuses the key it is given.
// An admin adds a provider (the form) and tests it, sees its key pool, adds a second one (the
// JSON editor) whose test shows the upstream's refusal, meets the field a refusal names, adds a
// model and a plan; calls made with the openai SDK show on the dashboard; the records of every
// account are searched by request id; a key's rpm and models are set where its budget is; an
// admin token is created (shown once), used and revoked; the audit log shows every change with
// its diff. A second gateway, whose file is the catalog's source, shows the catalog read-only.
// Every page is captured at 1280 and 390 px into test-output/console-screenshots/, and none may
// overflow horizontally at 390 px.
import assert from "node:assert/strict";
import { randomBytes } from "node:crypto";
import { existsSync, mkdirSync, readFileSync } from "node:fs";
import { join } from "node:path";
import { after, before, describe, test } from "node:test";
import OpenAI, { APIError } from "openai";
import type { Browser, BrowserContext, Response as BrowserResponse, Page } from "playwright-core";
import { createUser } from "../src/accounts/users.ts";
import { CONSOLE_DIST } from "../src/http/console-static.ts";
import { formatUsd } from "../src/prices/usd.ts";
import { findChromium } from "./support/chromium.ts";
import { capture, launchChromium, SHOTS, settled, WIDE } from "./support/console-browser.ts";
import { pricedModels, startTestGateway, TEST_MODEL, type TestGateway } from "./support/gateway.ts";
import { type MockUpstream, startMockUpstream } from "./support/mock-openai-upstream.ts";

const ADMIN = { email: "operator@gateway.test", password: "operator-password-1234" };
/** the key the second upstream takes; the provider added for it is given another */
const LOCKED_KEY = "sk-locked-upstream-right";
/** a literal upstream key of the provider added through the form: the API shows it as "…" and its end */
const STORED_KEY = "sk-upstream-b-secret-7f3e";

/** How the console writes nanodollars (format.ts, fmtUsd), for figures below $1,000. */
function usd(nanos: number): string {
  const [whole = "0", frac = ""] = formatUsd(nanos).split(".");
  return `$${whole}.${frac.padEnd(2, "0")}`;
}

async function logIn(page: Page, origin: string, who: { email: string; password: string }): Promise<void> {
  await page.goto(`${origin}/console/`);
  await page.getByLabel("E-mail").fill(who.email);
  await page.getByLabel("Password").fill(who.password);
  await page.getByRole("button", { name: "Sign in" }).click();
  await page.getByRole("heading", { level: 1, name: "Overview" }).waitFor();
}

/** A tab of the Operations page, by its link in the page's own navigation. */
async function tab(page: Page, name: string): Promise<void> {
  await page.getByRole("navigation", { name: "Operations" }).getByRole("link", { name, exact: true }).click();
  await settled(page);
}

describe("the operators' pages of the console in Chromium", { timeout: 240_000 }, () => {
  let upstream: MockUpstream;
  let locked: MockUpstream;
  let gw: TestGateway;
  let browser: Browser;
  let context: BrowserContext;
  let page: Page;
  let accountId: string;
  let keyId: string;
  let secret: string;
  let okCall: string;
  let failedCall: string;
  const pageErrors: string[] = [];

  before(async () => {
    const chromiumBinary = await findChromium();
    if (!existsSync(join(CONSOLE_DIST, "index.html")))
      throw new Error("The console is not built: run `npm run build:console` first (`npm test` does).");
    mkdirSync(SHOTS, { recursive: true });
    upstream = await startMockUpstream();
    locked = await startMockUpstream({ apiKey: LOCKED_KEY });
    gw = await startTestGateway({
      upstream,
      config: { catalog: { source: "store" }, models: pricedModels(upstream) },
      env: { GATEWAY_SECRET_KEY: randomBytes(32).toString("base64url") },
    });
    const db = gw.gateway.deps.store.db;
    accountId = await gw.account("Acme");
    const key = await gw.key(accountId, { name: "ops-app" });
    keyId = key.id;
    secret = key.secret;
    const operators = await gw.account("Gateway operators");
    await createUser(db, { account_id: operators, role: "admin", ...ADMIN });
    browser = await launchChromium(chromiumBinary);
    context = await browser.newContext({ viewport: WIDE, locale: "en-US", acceptDownloads: true });
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
    await locked?.close();
  });

  test("an admin opens Operations: its tabs, and a catalog the store keeps, so editable", async () => {
    await logIn(page, gw.origin, ADMIN);
    await page.getByRole("navigation", { name: "Console" }).getByRole("link", { name: "Operations" }).click();
    await settled(page);
    await page.getByRole("heading", { level: 1, name: "Operations" }).waitFor();
    const tabs = await page.getByRole("navigation", { name: "Operations" }).getByRole("link").allInnerTexts();
    assert.deepEqual(tabs, [
      "Dashboard",
      "Providers",
      "Models",
      "Plans",
      "Records",
      "Audit log",
      "Admin tokens",
    ]);
    await tab(page, "Providers");
    // the file seeded the store's catalog
    await page.locator('tr[data-provider="mock"]').waitFor();
    assert.equal(await page.getByTestId("catalog-read-only").count(), 0);
    assert.equal(await page.getByRole("button", { name: "Add provider" }).isEnabled(), true);
  });

  test("a provider is added through the form; its test shows the latency, its page the upstream key", async () => {
    await page.getByRole("button", { name: "Add provider" }).click();
    const dialog = page.getByRole("dialog", { name: "Add a provider" });
    await dialog.getByLabel("Id", { exact: true }).fill("mock-b");
    await dialog.getByLabel("Type", { exact: true }).selectOption("openai-compatible");
    await dialog.getByLabel("Base URL", { exact: true }).fill(upstream.url);
    await dialog.getByLabel("Upstream keys", { exact: true }).fill(STORED_KEY);
    await page.screenshot({ path: join(SHOTS, "ops-provider-form-1280.png") });
    const answers: Promise<string>[] = [];
    const collect = (res: BrowserResponse) => {
      if (new URL(res.url()).pathname.startsWith("/admin/v1/providers")) answers.push(res.text());
    };
    page.on("response", collect);
    await dialog.getByRole("button", { name: "Add provider" }).click();
    await page.getByRole("status").filter({ hasText: "Provider mock-b added." }).waitFor();
    const row = page.locator('tr[data-provider="mock-b"]');
    await row.waitFor();
    page.off("response", collect);
    assert.match(await row.innerText(), /openai-compatible[\s\S]*1 stored key[\s\S]*enabled/);
    // the key is never shown again: not on the page, not in what the API answered
    assert.doesNotMatch(await page.locator("main").innerText(), new RegExp(STORED_KEY));
    assert.ok(answers.length >= 2, "the POST and the list's reload");
    for (const body of await Promise.all(answers)) assert.doesNotMatch(body, new RegExp(STORED_KEY));

    await row.getByRole("button", { name: /^Test/ }).click();
    const test = page.getByRole("dialog", { name: "Test mock-b" });
    await test.getByLabel("Upstream model").fill("mock-model");
    await test.getByRole("button", { name: "Run test" }).click();
    const result = test.getByTestId("test-result");
    await result.waitFor();
    assert.match(await result.innerText(), /^OK: mock-model answered in [\d,]+ ms\.$/);
    assert.ok(upstream.requests.some((r) => r.headers.authorization === `Bearer ${STORED_KEY}`));
    await page.keyboard.press("Escape");
    await test.waitFor({ state: "hidden" });

    await row.getByRole("link", { name: "mock-b" }).click();
    await settled(page);
    await page.getByRole("heading", { name: /^Provider mock-b/ }).waitFor();
    const keys = page.getByRole("table", { name: "The provider's upstream keys and their state" });
    await keys.waitFor();
    const keyRows = keys.locator("tbody tr");
    assert.equal(await keyRows.count(), 1);
    const cells = await keyRows.first().locator("td").allInnerTexts();
    assert.equal(cells[1], `…${STORED_KEY.slice(-4)}`);
    assert.match(cells[2]!, /^ready/);
  });

  test("a provider edited in the JSON editor keeps its masked key, and its test sends the new header", async () => {
    await tab(page, "Providers");
    await page.locator('tr[data-provider="mock-b"]').getByRole("button", { name: /^Edit/ }).click();
    const dialog = page.getByRole("dialog", { name: "Edit provider mock-b" });
    assert.equal(
      await dialog.getByLabel("Upstream keys", { exact: true }).inputValue(),
      `…${STORED_KEY.slice(-4)}`,
    );
    await dialog.getByRole("tab", { name: "JSON" }).click();
    const json = dialog.getByLabel("The whole provider (JSON)");
    const entry = JSON.parse(await json.inputValue());
    assert.deepEqual(entry.api_keys, [`…${STORED_KEY.slice(-4)}`]);
    await json.fill(JSON.stringify({ ...entry, headers: { "x-team": "operations" } }, null, 2));
    const patches: string[] = [];
    page.on("request", (req) => {
      if (req.method() === "PATCH") patches.push(req.postData() ?? "");
    });
    await dialog.getByRole("button", { name: "Save" }).click();
    await page.getByRole("status").filter({ hasText: "Provider mock-b saved." }).waitFor();
    // only what changed was sent: the masked key was left out, so the stored one stays
    assert.deepEqual(
      patches.map((body) => JSON.parse(body)),
      [{ headers: { "x-team": "operations" } }],
    );
    upstream.reset();
    const row = page.locator('tr[data-provider="mock-b"]');
    await row.getByRole("button", { name: /^Test/ }).click();
    const test = page.getByRole("dialog", { name: "Test mock-b" });
    await test.getByLabel("Upstream model").fill("mock-model");
    await test.getByRole("button", { name: "Run test" }).click();
    await test.getByTestId("test-result").filter({ hasText: /^OK/ }).waitFor();
    const sent = upstream.requests.at(-1);
    assert.equal(sent?.headers.authorization, `Bearer ${STORED_KEY}`);
    assert.equal(sent?.headers["x-team"], "operations");
    await page.keyboard.press("Escape");
  });

  test("a provider added through the JSON editor: its test shows what the upstream answered", async () => {
    await tab(page, "Providers");
    await page.getByRole("button", { name: "Add provider" }).click();
    const dialog = page.getByRole("dialog", { name: "Add a provider" });
    await dialog.getByRole("tab", { name: "JSON" }).click();
    const json = dialog.getByLabel("The whole provider (JSON)");
    await json.fill(
      JSON.stringify({
        id: "locked",
        type: "openai-compatible",
        base_url: locked.url,
        api_keys: ["sk-not-the-right-one"],
        timeouts: { connect_ms: 2_000, first_byte_ms: 3_000, idle_ms: 3_000, total_ms: 10_000 },
      }),
    );
    // back to the form: the JSON's fields are there
    await dialog.getByRole("tab", { name: "Form" }).click();
    assert.equal(await dialog.getByLabel("Base URL", { exact: true }).inputValue(), locked.url);
    await dialog.getByRole("button", { name: "Add provider" }).click();
    await page.getByRole("status").filter({ hasText: "Provider locked added." }).waitFor();
    const row = page.locator('tr[data-provider="locked"]');
    await row.getByRole("button", { name: /^Test/ }).click();
    const test = page.getByRole("dialog", { name: "Test locked" });
    await test.getByLabel("Upstream model").fill("mock-model");
    await test.getByRole("button", { name: "Run test" }).click();
    const result = test.getByTestId("test-result");
    await result.waitFor();
    assert.match(await result.innerText(), /^Failed after [\d,]+ ms \(mock-model\): HTTP 401: .+/);
    await page.keyboard.press("Escape");
    await test.waitFor({ state: "hidden" });

    // disabled and enabled again from its row
    await row.getByRole("button", { name: /^Disable/ }).click();
    await page.getByRole("status").filter({ hasText: "Provider locked disabled." }).waitFor();
    await row.getByText("disabled", { exact: true }).waitFor();
    await row.getByRole("button", { name: /^Enable/ }).click();
    await page.getByRole("status").filter({ hasText: "Provider locked enabled." }).waitFor();
    await row.getByText("enabled", { exact: true }).waitFor();
  });

  test("a change the gateway refuses names its field beside the form", async () => {
    await tab(page, "Models");
    await page.getByRole("button", { name: "Add model" }).click();
    const dialog = page.getByRole("dialog", { name: "Add a model" });
    await dialog.getByLabel("Id", { exact: true }).fill("ops-model");
    await dialog.getByLabel("Fallbacks", { exact: true }).fill("no-such-model");
    await dialog.getByRole("button", { name: "Add model" }).click();
    const alert = dialog.getByRole("alert");
    await alert.waitFor();
    assert.match(await alert.locator("[data-param]").innerText(), /fallbacks/);
    assert.equal(await dialog.getByLabel("Fallbacks", { exact: true }).getAttribute("aria-invalid"), "true");
    await page.screenshot({ path: join(SHOTS, "ops-model-refused-1280.png") });
    await dialog.getByRole("button", { name: "Cancel" }).click();
  });

  test("a model is added with its deployment and prices, and a plan that includes it", async () => {
    await page.getByRole("button", { name: "Add model" }).click();
    const dialog = page.getByRole("dialog", { name: "Add a model" });
    await dialog.getByLabel("Id", { exact: true }).fill("ops-model");
    await dialog.getByLabel("Provider", { exact: true }).selectOption("mock-b");
    await dialog.getByLabel("Upstream model", { exact: true }).fill("mock-model");
    await dialog.getByLabel("Input", { exact: true }).fill("2");
    await dialog.getByLabel("Output", { exact: true }).fill("8");
    await page.screenshot({ path: join(SHOTS, "ops-model-form-1280.png"), fullPage: true });
    await dialog.getByRole("button", { name: "Add model" }).click();
    await page.getByRole("status").filter({ hasText: "Model ops-model added." }).waitFor();
    const model = page.locator('tr[data-model="ops-model"]');
    assert.match(await model.innerText(), /mock-b \/ mock-model[\s\S]*\$2\.00 in · \$8\.00 out[\s\S]*none/);

    await tab(page, "Plans");
    await page.getByRole("button", { name: "Add plan" }).click();
    const plan = page.getByRole("dialog", { name: "Add a plan" });
    await plan.getByLabel("Id", { exact: true }).fill("ops-plan");
    await plan.getByLabel("Quota (tokens)").fill("5,000,000");
    await plan.getByLabel("ops-model", { exact: true }).check();
    await plan.getByLabel(TEST_MODEL, { exact: true }).check();
    await plan.getByLabel("Requests, each key").fill("100");
    await plan.getByRole("button", { name: "Add plan" }).click();
    await page.getByRole("status").filter({ hasText: "Plan ops-plan added." }).waitFor();
    const row = page.locator('tr[data-plan="ops-plan"]');
    assert.match(await row.innerText(), /5,000,000[\s\S]*ops-model, gpt-test/);
    assert.match(await row.innerText(), /100 rpm/);

    await tab(page, "Models");
    assert.match(await page.locator('tr[data-model="ops-model"]').innerText(), /ops-plan/);
  });

  test("calls made with the openai SDK show on the dashboard", async () => {
    const client = new OpenAI({ apiKey: secret, baseURL: gw.baseURL, maxRetries: 0 });
    const { response } = await client.chat.completions
      .create({
        model: TEST_MODEL,
        messages: [{ role: "user", content: "Hello operators mock:tokens=7" }],
        max_tokens: 50,
      })
      .withResponse();
    okCall = response.headers.get("x-request-id")!;
    await client.chat.completions.create({
      model: TEST_MODEL,
      messages: [{ role: "user", content: "And again mock:tokens=3" }],
      max_tokens: 50,
    });
    const failed = await client.chat.completions
      .create({ model: TEST_MODEL, messages: [{ role: "user", content: "This fails mock:status=500" }] })
      .then(
        () => null,
        (err: unknown) => err,
      );
    assert.ok(failed instanceof APIError);
    failedCall = failed.headers?.get("x-request-id") ?? "";
    assert.ok(okCall && failedCall);
    const recorded = await gw.recorded("account_id", accountId);
    assert.equal(recorded.calls, 3);
    const cost = await gw.gateway.deps.store.db
      .selectFrom("call_records")
      .select((eb) => eb.fn.sum<number>("cost_nanos").as("nanos"))
      .where("account_id", "=", accountId)
      .executeTakeFirstOrThrow();

    await tab(page, "Dashboard");
    await page.getByRole("radio", { name: "Last 24 hours" }).check();
    await settled(page);
    assert.equal(new URL(page.url()).searchParams.get("range"), "24h");
    const stat = (id: string) => page.getByTestId(`stat-${id}`).locator(".stat-value").innerText();
    assert.equal(await stat("calls"), "3");
    assert.equal(await stat("errors"), "1");
    assert.equal(await stat("tokens"), recorded.tokens.toLocaleString("en-US"));
    assert.equal(await stat("spend"), usd(Number(cost.nanos)));
    assert.match(await stat("latency"), /^[\d,]+ ms$/);

    /** the row of a table of the dashboard whose first cell is `name` */
    const row = (table: string, name: string) =>
      page
        .getByTestId(table)
        .getByRole("row")
        .filter({ has: page.getByRole("rowheader", { name, exact: true }) });
    assert.match(await row("by-model", TEST_MODEL).innerText(), /gpt-test\s+3\s+1\s+33\.3%/);
    await row("by-provider", "mock").waitFor();
    await row("by-account", "Acme").waitFor();
    await page.getByTestId("by-key").getByRole("row").filter({ hasText: "ops-app" }).waitFor();
    assert.match(await row("latency", "mock").innerText(), /mock\s+3\s+[\d,]+ ms/);

    // the chart: spend, split by model
    await page.getByRole("radio", { name: "Spend" }).check();
    await page.getByRole("radio", { name: "By model" }).check();
    const legend = page.getByRole("list", { name: "Chart legend, by model" });
    await legend.waitFor();
    const spent = usd(Number(cost.nanos)).replace(/[$.]/g, "\\$&");
    assert.match(await legend.innerText(), new RegExp(`gpt-test\\s*${spent}`));
  });

  test("the records of every account are searched by request id and status", async () => {
    await tab(page, "Records");
    await page.getByLabel("Request id", { exact: true }).fill(okCall);
    await page.getByRole("button", { name: "Search" }).click();
    await page.getByRole("button", { name: "Clear filters" }).waitFor();
    await settled(page);
    const rows = page.locator("tr[data-request-id]");
    assert.equal(await rows.count(), 1);
    const row = page.locator(`tr[data-request-id="${okCall}"]`);
    const cells = await row.locator("td").allInnerTexts();
    assert.equal(cells[0], "Acme");
    assert.match(cells[2]!, /ops-app/);
    assert.equal(cells[3], TEST_MODEL);
    assert.equal(new URL(page.url()).searchParams.get("request_id"), okCall);
    await row.getByRole("button", { name: `Details of ${okCall}` }).click();
    const detail = page.getByRole("dialog", { name: "Call record" });
    assert.equal(await detail.locator('[data-field="Account"]').innerText(), "Acme");
    assert.equal(await detail.getByRole("button", { name: /Report a problem/ }).count(), 0);
    await page.keyboard.press("Escape");

    await page.getByRole("button", { name: "Clear filters" }).click();
    await page.getByLabel("Status", { exact: true }).selectOption("error");
    await page.getByLabel("Account", { exact: true }).selectOption(accountId);
    await page.getByRole("button", { name: "Search" }).click();
    await page.locator(`tr[data-request-id="${failedCall}"]`).waitFor();
    await settled(page);
    assert.equal(await rows.count(), 1);

    const [download] = await Promise.all([
      page.waitForEvent("download"),
      page.getByRole("link", { name: "Export CSV" }).click(),
    ]);
    const csv = readFileSync((await download.path())!, "utf8");
    assert.match(csv, new RegExp(failedCall));
    assert.doesNotMatch(csv, new RegExp(okCall));
  });

  test("an admin sets a key's rpm and models where its budget is set, and /v1 keeps to them", async () => {
    await page
      .getByRole("navigation", { name: "Console" })
      .getByRole("link", { name: "Administration" })
      .click();
    await page
      .getByRole("navigation", { name: "Administration" })
      .getByRole("link", { name: "Keys" })
      .click();
    await settled(page);
    const row = page.getByRole("row").filter({ hasText: "ops-app" });
    // the limits come from the admin API, after the row the console API drew
    await row.getByText("(plan)").first().waitFor();
    assert.match(await row.innerText(), /\(plan\)[\s\S]*the plan's/);
    await row.getByRole("button", { name: /^Limits/ }).click();
    const dialog = page.getByRole("dialog", { name: /^Limits of sk-/ });
    await dialog.getByLabel("Requests per minute").fill("2");
    await dialog.getByLabel("Only these").check();
    await dialog.getByLabel(TEST_MODEL, { exact: true }).check();
    await dialog.getByLabel("demo", { exact: true }).uncheck();
    await page.screenshot({ path: join(SHOTS, "ops-key-limits-1280.png") });
    await dialog.getByRole("button", { name: "Save limits" }).click();
    await page
      .getByRole("status")
      .filter({ hasText: /^Limits of sk-.*saved\.$/ })
      .waitFor();
    await row.getByText("2 rpm").waitFor();
    assert.match(await row.innerText(), /2 rpm[\s\S]*gpt-test/);
    assert.doesNotMatch(await row.innerText(), /demo/);

    const client = new OpenAI({ apiKey: secret, baseURL: gw.baseURL, maxRetries: 0 });
    const other = await client.chat.completions
      .create({ model: "demo", messages: [{ role: "user", content: "hi" }], max_tokens: 5 })
      .then(
        () => null,
        (err: unknown) => err,
      );
    assert.ok(other instanceof APIError && other.status >= 400 && other.status < 500, String(other));
    // two requests a minute: within three more calls one is refused
    let limited: unknown = null;
    for (let i = 0; i < 3 && !limited; i++)
      limited = await client.chat.completions
        .create({ model: TEST_MODEL, messages: [{ role: "user", content: "again" }], max_tokens: 5 })
        .then(
          () => null,
          (err: unknown) => err,
        );
    assert.ok(limited instanceof APIError && limited.status === 429, String(limited));
  });

  test("an admin token is created and shown once, works, and once revoked works no more", async () => {
    await page.getByRole("navigation", { name: "Console" }).getByRole("link", { name: "Operations" }).click();
    await tab(page, "Admin tokens");
    await page.getByRole("button", { name: "Create admin token" }).click();
    const create = page.getByRole("dialog", { name: "Create an admin token" });
    await create.getByLabel("Name", { exact: true }).fill("ci-reader");
    await create.getByRole("button", { name: "Create token" }).click();
    const shown = page.getByRole("dialog", { name: "Your new admin token" });
    const token = await shown.getByLabel("Admin token").inputValue();
    assert.match(token, /^gwadmin-/);
    assert.equal(await shown.getByRole("button", { name: "Copy" }).count(), 1);
    await page.screenshot({ path: join(SHOTS, "ops-token-created-1280.png") });
    await shown.getByRole("button", { name: "I have copied it" }).click();
    await shown.waitFor({ state: "hidden" });
    const row = page.locator('tr[data-token="ci-reader"]');
    await row.waitFor();
    assert.match(await row.innerText(), /read[\s\S]*active/);
    assert.doesNotMatch(await page.locator("main").innerText(), new RegExp(token));

    const call = () =>
      fetch(`${gw.origin}/admin/v1/catalog`, { headers: { authorization: `Bearer ${token}` } });
    assert.equal((await call()).status, 200);
    await row.getByRole("button", { name: /^Revoke/ }).click();
    const confirm = page.getByRole("dialog", { name: "Revoke ci-reader?" });
    assert.equal(await confirm.locator(":focus").textContent(), "Keep the token");
    await confirm.getByRole("button", { name: "Revoke token" }).click();
    await page.getByRole("status").filter({ hasText: "Admin token ci-reader revoked." }).waitFor();
    await row.getByText("revoked").waitFor();
    assert.equal(await row.getByRole("button", { name: /^Revoke/ }).count(), 0);
    assert.equal((await call()).status, 401);
  });

  test("the audit log lists every change, each with its before and after", async () => {
    await tab(page, "Audit log");
    for (const change of ["providers:create:mock-b", "models:create:ops-model", "plans:create:ops-plan"])
      await page.locator(`tr[data-audit="${change}"]`).waitFor();
    await page.locator(`tr[data-audit^="keys:"][data-audit$=":${keyId}"]`).first().waitFor();
    assert.ok((await page.locator('tr[data-audit^="admin-tokens:"]').count()) >= 2, "created and revoked");

    await page.getByLabel("Resource", { exact: true }).selectOption("models");
    await page.getByRole("button", { name: "Filter", exact: true }).click();
    await page.getByRole("button", { name: "Clear filters" }).waitFor();
    await settled(page);
    const resources = await Promise.all(
      (await page.locator("tr[data-audit]").all()).map(
        async (r) => (await r.getAttribute("data-audit"))?.split(":")[0],
      ),
    );
    assert.ok(resources.length > 0 && resources.every((r) => r === "models"), resources.join());

    await page
      .locator('tr[data-audit="models:create:ops-model"]')
      .getByRole("button", { name: /field/ })
      .click();
    const diff = page.getByRole("dialog", { name: "create models ops-model" });
    const input = diff.getByRole("row").filter({ hasText: "pricing.input" });
    assert.match(await input.innerText(), /pricing\.input\s+added\s+–\s+2/);
    await page.screenshot({ path: join(SHOTS, "ops-audit-diff-1280.png") });
    await page.keyboard.press("Escape");

    await page.getByLabel("Resource", { exact: true }).selectOption("keys");
    await page.getByRole("button", { name: "Filter", exact: true }).click();
    await settled(page);
    await page.locator(`tr[data-audit$=":${keyId}"]`).first().getByRole("button", { name: /field/ }).click();
    const keyDiff = page.getByRole("dialog", { name: new RegExp(`keys ${keyId}$`) });
    assert.match(
      await keyDiff.getByRole("row").filter({ hasText: "rpm_limit" }).innerText(),
      /rpm_limit\s+changed\s+null\s+2/,
    );
    await page.keyboard.press("Escape");
  });

  test("every operations page, captured at 1280 and 390 px, without horizontal overflow at 390", async () => {
    const pages: [string, string][] = [
      ["/operations/dashboard?range=24h", "ops-dashboard"],
      ["/operations/providers", "ops-providers"],
      ["/operations/providers/mock-b", "ops-provider"],
      ["/operations/models", "ops-models"],
      ["/operations/plans", "ops-plans"],
      [`/operations/records?request_id=${okCall}`, "ops-records"],
      ["/operations/audit", "ops-audit"],
      ["/operations/tokens", "ops-tokens"],
      ["/admin/keys", "ops-admin-keys"],
    ];
    for (const [path, name] of pages) await capture(page, path, name);
  });

  test("a gateway whose file is the catalog's source shows the catalog read-only", async () => {
    const fileGw = await startTestGateway({ upstream });
    const other = await browser.newContext({ viewport: WIDE, locale: "en-US" });
    try {
      const operators = await fileGw.account("Gateway operators");
      await createUser(fileGw.gateway.deps.store.db, { account_id: operators, role: "admin", ...ADMIN });
      const admin = await other.newPage();
      admin.on("pageerror", (err) => pageErrors.push(err.message));
      await logIn(admin, fileGw.origin, ADMIN);
      await admin.goto(`${fileGw.origin}/console/operations/providers`);
      await settled(admin);
      await admin.locator('tr[data-provider="mock"]').waitFor();
      assert.match(
        await admin.getByTestId("catalog-read-only").innerText(),
        /managed in the configuration file/,
      );
      assert.equal(await admin.getByRole("button", { name: "Add provider" }).count(), 0);
      const row = admin.locator('tr[data-provider="mock"]');
      assert.equal(await row.getByRole("button", { name: /^Edit/ }).isDisabled(), true);
      assert.equal(await row.getByRole("button", { name: /^Delete/ }).isDisabled(), true);
      // a test changes nothing: it stays
      assert.equal(await row.getByRole("button", { name: /^Test/ }).isEnabled(), true);
      await admin.goto(`${fileGw.origin}/console/operations/models`);
      await settled(admin);
      await admin.getByTestId("catalog-read-only").waitFor();
      assert.equal(await admin.getByRole("button", { name: "Add model" }).count(), 0);
      await admin.screenshot({ path: join(SHOTS, "ops-read-only-1280.png"), fullPage: true });
    } finally {
      await other.close();
      await fileGw.close();
    }
  });

  test("the pages ran without script errors or policy violations", () => {
    assert.deepEqual(pageErrors, []);
  });
});
