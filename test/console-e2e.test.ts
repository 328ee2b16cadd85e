// The web console end to end in a real browser: Chromium (support/chromium.ts: the system's
// or the one the @sparticuz/chromium dev dependency ships) driven by playwright-core,
// against a real gateway (SQLite store, the built console in dist/console) in front of the
// mock upstream. An owner logs in, creates a key, uses it through /v1 with the openai SDK,
// finds the calls and their cost in Today, exports them as CSV, reports a problem from a
// record; an admin (second browser context) answers the ticket and the owner sees the answer;
// the admin gives the key and the account money budgets, the owner sees them, and the key is
// refused once its budget is spent. Every page is
// captured at 1280 and 390 px into test-output/console-screenshots/ (not committed), and
// none may overflow horizontally at 390 px.
import assert from "node:assert/strict";
import { existsSync, mkdirSync, readFileSync } from "node:fs";
import { join } from "node:path";
import { after, before, describe, test } from "node:test";
import OpenAI, { APIError } from "openai";
import type { Browser, BrowserContext, Locator, Page, Route } from "playwright-core";
import { createUser } from "../src/accounts/users.ts";
import { CONSOLE_CSP, CONSOLE_DIST } from "../src/http/console-static.ts";
import { findChromium } from "./support/chromium.ts";
import { capture, launchChromium, NARROW, SHOTS, settled, WIDE } from "./support/console-browser.ts";
import { startTestGateway, TEST_MODEL, type TestGateway, testConfig } from "./support/gateway.ts";
import { type MockUpstream, startMockUpstream } from "./support/mock-openai-upstream.ts";

/**
 * Without the background-networking switches Chromium keeps trying to reach Google's
 * services, which on a machine without outside network stalls it. playwright-core gives every
 * launch a fresh temporary profile (user-data-dir) of its own.
 */

/**
 * TEST_MODEL's prices here, USD per million tokens: 2,000 nanodollars a prompt token and
 * 8,000 an output token. The first call (6 prompt words, 7 output tokens) costs 68,000.
 */
const PRICING = { input: 2, output: 8 };
const OK_CALL_NANOS = 6 * 2_000 + 7 * 8_000;
/** How the console (en-US) writes a date of a UTC day. */
const utcDate = (ms: number) =>
  new Intl.DateTimeFormat("en-US", { dateStyle: "medium", timeZone: "UTC" }).format(new Date(ms));

const OWNER = { email: "owner@acme.test", password: "owner-password-1234" };
const ADMIN = { email: "admin@gateway.test", password: "admin-password-1234" };
const MEMBER = { email: "member@acme.test", password: "member-password-1234" };

/** RFC 4180: quoted fields may hold commas, quotes ("") and line breaks. */
function parseCsv(text: string): string[][] {
  const rows: string[][] = [];
  let row: string[] = [];
  let cell = "";
  let quoted = false;
  for (let i = 0; i < text.length; i++) {
    const c = text[i]!;
    if (quoted) {
      if (c === '"' && text[i + 1] === '"') {
        cell += '"';
        i++;
      } else if (c === '"') quoted = false;
      else cell += c;
    } else if (c === '"') quoted = true;
    else if (c === ",") {
      row.push(cell);
      cell = "";
    } else if (c === "\n" || c === "\r") {
      if (c === "\r" && text[i + 1] === "\n") i++;
      row.push(cell);
      rows.push(row);
      row = [];
      cell = "";
    } else cell += c;
  }
  if (cell !== "" || row.length > 0) {
    row.push(cell);
    rows.push(row);
  }
  return rows;
}

/** A link of the console's main navigation (pages also link to each other in their text). */
async function go(page: Page, name: string): Promise<void> {
  await page.getByRole("navigation", { name: "Console" }).getByRole("link", { name }).click();
  await settled(page);
}

async function logIn(page: Page, origin: string, who: { email: string; password: string }): Promise<void> {
  await page.goto(`${origin}/console/`);
  await page.getByLabel("E-mail").fill(who.email);
  await page.getByLabel("Password").fill(who.password);
  await page.getByRole("button", { name: "Sign in" }).click();
  await page.getByRole("heading", { level: 1, name: "Overview" }).waitFor();
}

/**
 * Does `twice` (a double click, Enter twice: a form submitted a second time) while the admin
 * API's changes are held in the browser, so a second submit always meets the first request
 * still on its way; then lets them through. Returns the number of requests the gateway
 * answered meanwhile, by its own request log.
 */
async function answeredAfter(gw: TestGateway, page: Page, twice: () => Promise<void>): Promise<number> {
  const answered = () =>
    gw.logs.filter((line) => {
      const entry = JSON.parse(line) as { msg?: string; method?: string; route?: string };
      return (
        entry.msg === "request" && entry.method !== "GET" && entry.route?.startsWith("/api/console/admin/")
      );
    }).length;
  const before = answered();
  const held: Route[] = [];
  const hold = async (route: Route) => {
    if (route.request().method() === "GET") await route.continue();
    else held.push(route);
  };
  await page.route("**/api/console/admin/**", hold);
  try {
    await twice();
    // a request sent after both submits, through the same route: once it is back, every
    // change the submits sent has reached the handler (requests of a page arrive in order)
    await page.evaluate(() => fetch("/api/console/admin/accounts").then((res) => res.status));
    const requests = held.map((route) => route.request());
    await Promise.all(held.map((route) => route.continue()));
    await Promise.all(requests.map((request) => request.response()));
  } finally {
    await page.unroute("**/api/console/admin/**", hold);
  }
  return answered() - before;
}

/** Two clicks in a row on a dialog's submit button. */
const doubleClick = (button: Locator) => () => button.dblclick();

describe("web console in Chromium", { timeout: 240_000 }, () => {
  let upstream: MockUpstream;
  let gw: TestGateway;
  let browser: Browser;
  let ownerContext: BrowserContext;
  let adminContext: BrowserContext;
  let owner: Page;
  let admin: Page;
  let accountId: string;
  let secret: string;
  let keyId: string;
  /** the successful call and the failed one, made through /v1 */
  let okCall: string;
  let failedCall: string;
  let ticketPath: string;
  const pageErrors: string[] = [];

  before(async () => {
    // Never skip: without a browser this suite fails, saying why.
    const chromiumBinary = await findChromium();
    if (!existsSync(join(CONSOLE_DIST, "index.html")))
      throw new Error("The console is not built: run `npm run build:console` first (`npm test` does).");
    mkdirSync(SHOTS, { recursive: true });
    upstream = await startMockUpstream();
    const models = testConfig(upstream).models.map((m) =>
      m.id === TEST_MODEL ? { ...m, pricing: PRICING } : m,
    );
    gw = await startTestGateway({ upstream, config: { models } });
    const db = gw.gateway.deps.store.db;
    accountId = await gw.account("Acme");
    const operators = await gw.account("Gateway operators");
    await createUser(db, { account_id: accountId, role: "owner", ...OWNER });
    await createUser(db, { account_id: accountId, role: "member", ...MEMBER });
    await createUser(db, { account_id: operators, role: "admin", ...ADMIN });
    browser = await launchChromium(chromiumBinary);
    ownerContext = await browser.newContext({ viewport: WIDE, locale: "en-US", acceptDownloads: true });
    adminContext = await browser.newContext({ viewport: WIDE, locale: "en-US" });
    // a step that cannot find what it waits for fails in seconds, not after half a minute
    ownerContext.setDefaultTimeout(10_000);
    adminContext.setDefaultTimeout(10_000);
    owner = await ownerContext.newPage();
    admin = await adminContext.newPage();
    for (const page of [owner, admin]) {
      page.on("pageerror", (err) => pageErrors.push(err.message));
      // a violated Content-Security-Policy shows as a console error
      page.on("console", (m) => {
        if (m.type() === "error" && /Content Security Policy|Refused to/i.test(m.text()))
          pageErrors.push(m.text());
      });
    }
  });

  after(async () => {
    await browser?.close();
    await gw?.close();
    await upstream?.close();
  });

  test("the console page comes with its security headers", async () => {
    const res = await fetch(`${gw.origin}/console/records`);
    assert.equal(res.status, 200);
    assert.equal(res.headers.get("content-security-policy"), CONSOLE_CSP);
    assert.equal(res.headers.get("x-frame-options"), "DENY");
    assert.match(await res.text(), /<div id="root"><\/div>/);
  });

  test("the owner logs in", async () => {
    await owner.goto(`${gw.origin}/console/`);
    await owner.getByRole("heading", { name: "Sign in" }).waitFor();
    for (const size of [WIDE, NARROW]) {
      await owner.setViewportSize(size);
      await owner.screenshot({ path: join(SHOTS, `login-${size.width}.png`), fullPage: true });
    }
    await owner.setViewportSize(WIDE);
    await owner.getByLabel("E-mail").fill(OWNER.email);
    await owner.getByLabel("Password").fill("not-the-password");
    await owner.getByRole("button", { name: "Sign in" }).click();
    await owner
      .getByRole("alert")
      .filter({ hasText: /invalid_credentials/ })
      .waitFor();
    await owner.getByLabel("Password").fill(OWNER.password);
    await owner.getByRole("button", { name: "Sign in" }).click();
    await owner.getByRole("heading", { level: 1, name: "Overview" }).waitFor();
    assert.match(await owner.locator(".whoami").innerText(), /owner@acme\.test/);
    assert.equal(await owner.getByRole("link", { name: "Administration" }).count(), 0);
  });

  test("a dialog opened from the keyboard closes with Escape and gives focus back", async () => {
    await go(owner, "Keys");
    const create = owner.getByRole("button", { name: "Create key" });
    await create.focus();
    await owner.keyboard.press("Enter");
    const dialog = owner.getByRole("dialog", { name: "Create a key" });
    await dialog.waitFor();
    assert.equal(await dialog.locator(":focus").count(), 1, "the focus is inside the dialog");
    await owner.keyboard.press("Escape");
    await dialog.waitFor({ state: "hidden" });
    assert.equal(await owner.locator(":focus").textContent(), "Create key");
  });

  test("the owner creates a key: the secret is shown once, with the advice and a copy button", async () => {
    const originOfPosts: (string | undefined)[] = [];
    owner.on("request", async (request) => {
      if (request.method() === "POST" && request.url().endsWith("/api/console/keys"))
        originOfPosts.push((await request.allHeaders()).origin);
    });
    await owner.getByRole("button", { name: "Create key" }).click();
    const dialog = owner.getByRole("dialog", { name: "Create a key" });
    await dialog.getByLabel("Name").fill("e2e-app");
    await dialog.getByLabel("Token limit").fill("1,000,000");
    await dialog.getByRole("button", { name: "Create key" }).click();
    const shown = owner.getByRole("dialog", { name: "Your new key" });
    await shown.waitFor();
    secret = await shown.getByLabel("API key").inputValue();
    assert.match(secret, /^sk-/);
    assert.match(await shown.innerText(), /Use one key per application/);
    assert.equal(await shown.getByRole("button", { name: "Copy" }).count(), 1);
    await owner.screenshot({ path: join(SHOTS, "key-created-1280.png") });
    await shown.getByRole("button", { name: "I have copied it" }).click();
    await shown.waitFor({ state: "hidden" });
    const row = owner.getByRole("row").filter({ hasText: "e2e-app" });
    await row.waitFor();
    assert.match(await row.innerText(), /1,000,000/); // the limit, with thousands separators
    assert.doesNotMatch(await owner.locator("main").innerText(), new RegExp(secret));
    // Chromium sent the Origin of a same-origin POST itself: the server's check relies on it
    assert.deepEqual(originOfPosts, [gw.origin]);
    const keys = await gw.gateway.deps.store.db
      .selectFrom("api_keys")
      .select(["id", "name"])
      .where("account_id", "=", accountId)
      .execute();
    assert.equal(keys.length, 1);
    assert.equal(keys[0]!.name, "e2e-app");
    keyId = keys[0]!.id;
  });

  test("the key works through /v1 with the openai SDK", async () => {
    const client = new OpenAI({ apiKey: secret, baseURL: gw.baseURL, maxRetries: 0 });
    const { data, response } = await client.chat.completions
      .create({
        model: TEST_MODEL,
        messages: [{ role: "user", content: "Hello from the console test mock:tokens=7" }],
        max_tokens: 50,
        temperature: 0.3,
      })
      .withResponse();
    assert.equal(data.usage?.completion_tokens, 7);
    okCall = response.headers.get("x-request-id")!;
    assert.ok(okCall);
    try {
      await client.chat.completions.create({
        model: TEST_MODEL,
        messages: [{ role: "user", content: "This one fails mock:status=500" }],
        max_tokens: 20,
        temperature: 0.9,
      });
      assert.fail("the mock's 500 should fail the call");
    } catch (err) {
      assert.ok(err instanceof APIError);
      failedCall = err.headers?.get("x-request-id") ?? "";
    }
    assert.ok(failedCall);
  });

  test("Today shows both calls, the failed one too, with their figures", async () => {
    await go(owner, "Call records");
    assert.equal(await owner.getByRole("tab", { name: "Today" }).getAttribute("aria-selected"), "true");
    const stored = await gw.record(okCall);
    const row = owner.locator(`tr[data-request-id="${okCall}"]`);
    await row.waitFor();
    const cells = await row.locator("td").allInnerTexts();
    assert.match(cells[1]!, /e2e-app/);
    assert.equal(cells[2], TEST_MODEL);
    assert.equal(cells[3], "chat.completions");
    assert.equal(cells[4], stored.prompt_tokens.toLocaleString("en-US"));
    assert.equal(cells[5], "7");
    assert.equal(cells[6], stored.total_tokens.toLocaleString("en-US"));
    // the cost, by hand: 6 prompt and 7 output tokens at $2 and $8 per million
    assert.equal(Number(stored.cost_nanos), OK_CALL_NANOS);
    assert.equal(cells[7], "$0.000068");
    assert.match(cells[8]!, /ok/);
    assert.match(cells[10]!, new RegExp(okCall));
    const failed = owner.locator(`tr[data-request-id="${failedCall}"]`);
    await failed.waitFor();
    const failedStored = await gw.record(failedCall);
    const failedCells = await failed.locator("td").allInnerTexts();
    assert.equal(failedCells[7], "$0.00");
    assert.match(
      failedCells[8]!,
      new RegExp(`${failedStored.status}\\s+${failedStored.http_status} ${failedStored.error_code}`),
    );
    // the status filter narrows the view to the failed call
    await owner.getByLabel("Status").selectOption(failedStored.status);
    // the filtered page has arrived once "Clear filters" shows and nothing is loading
    await owner.getByRole("button", { name: "Clear filters" }).waitFor();
    await settled(owner);
    await failed.waitFor();
    assert.equal(await owner.locator("tr[data-request-id]").count(), 1);
    assert.equal(new URL(owner.url()).searchParams.get("status"), failedStored.status);
    await owner.getByRole("button", { name: "Clear filters" }).click();
    await owner.getByRole("button", { name: "Clear filters" }).waitFor({ state: "detached" });
    await settled(owner);
    await row.waitFor();
    assert.equal(await owner.locator("tr[data-request-id]").count(), 2);
  });

  test("Export CSV downloads the current view, and its rows match the calls", async () => {
    const [download] = await Promise.all([
      owner.waitForEvent("download"),
      owner.getByRole("link", { name: "Export CSV" }).click(),
    ]);
    assert.match(download.suggestedFilename(), /^records-today-\d{4}-\d{2}-\d{2}\.csv$/);
    const rows = parseCsv(readFileSync((await download.path())!, "utf8"));
    const [header, ...data] = rows;
    assert.ok(header);
    const column = (name: string) => {
      const i = header.indexOf(name);
      assert.ok(i >= 0, `the CSV has a ${name} column`);
      return i;
    };
    assert.equal(data.length, 2, "two calls today");
    const byId = new Map(data.map((r) => [r[column("request_id")], r]));
    for (const id of [okCall, failedCall]) {
      const stored = await gw.record(id);
      const r = byId.get(id);
      assert.ok(r, `the export has ${id}`);
      assert.equal(r[column("key_id")], keyId);
      assert.equal(r[column("model")], TEST_MODEL);
      assert.equal(r[column("status")], stored.status);
      assert.equal(Number(r[column("prompt_tokens")]), stored.prompt_tokens);
      assert.equal(Number(r[column("completion_tokens")]), stored.completion_tokens);
      assert.equal(Number(r[column("total_tokens")]), stored.total_tokens);
      assert.equal(Number(r[column("created_at")]), Number(stored.created_at));
    }
    assert.equal(JSON.parse(byId.get(okCall)![column("params")]!).temperature, 0.3);
    // cost (dollars, exact, and nanodollars), where the prices came from, and the token kinds
    const ok = byId.get(okCall)!;
    assert.deepEqual(
      [
        "cost_usd",
        "cost_nanos",
        "cost_source",
        "cached_tokens",
        "cache_write_tokens",
        "reasoning_tokens",
      ].map((f) => ok[column(f)]),
      ["0.000068", String(OK_CALL_NANOS), "config", "0", "0", "0"],
    );
    const failed = byId.get(failedCall)!;
    assert.deepEqual([failed[column("cost_usd")], failed[column("cost_nanos")]], ["0", "0"]);
  });

  test("a record's details say what it cost, from which prices, and its token kinds", async () => {
    await owner
      .locator(`tr[data-request-id="${okCall}"]`)
      .getByRole("button", { name: `Details of ${okCall}` })
      .click();
    const detail = owner.getByRole("dialog", { name: "Call record" });
    await detail.waitFor();
    assert.equal(await detail.locator('[data-field="Cost"]').innerText(), "$0.000068");
    assert.equal(await detail.locator('[data-field="Prices"]').innerText(), "the model's configured prices");
    assert.match(
      await detail.locator('[data-field="Of which"]').innerText(),
      /^0 cache reads, 0 cache writes \(of the input\); 0 reasoning \(of the output\)$/,
    );
    await owner.screenshot({ path: join(SHOTS, "record-detail-1280.png") });
    await owner.keyboard.press("Escape");
    await detail.waitFor({ state: "hidden" });
  });

  test("the overview charts cost as well as tokens, and says what today cost", async () => {
    await go(owner, "Overview");
    assert.equal(await owner.getByTestId("budget").locator(".stat-value").innerText(), "$0.000068");
    const legend = owner.getByRole("list", { name: "Chart legend, by key" });
    assert.match(await legend.innerText(), /e2e-app[\s\S]*tokens/);
    await owner.getByRole("radio", { name: "Cost" }).check();
    assert.match(await legend.innerText(), /e2e-app\s*\$0\.000068/);
    assert.match(
      (await owner.locator("figure.chart svg title").first().textContent()) ?? "",
      /^Cost per UTC day .*\$0\.000068 in total/,
    );
  });

  test("Last year lists calls that consumed tokens, so not the failed one", async () => {
    await go(owner, "Call records");
    await owner.getByRole("tab", { name: "Last year" }).click();
    await owner.locator(`tr[data-request-id="${okCall}"]`).waitFor();
    assert.equal(new URL(owner.url()).searchParams.get("view"), "year");
    assert.equal(await owner.locator(`tr[data-request-id="${failedCall}"]`).count(), 0);
    // arrow keys move between the tabs (and select them)
    await owner.getByRole("tab", { name: "Last year" }).focus();
    await owner.keyboard.press("ArrowLeft");
    await owner.locator(`tr[data-request-id="${failedCall}"]`).waitFor();
    assert.equal(await owner.getByRole("tab", { name: "Today" }).getAttribute("aria-selected"), "true");
  });

  test("Report a problem opens the new-ticket form filled from the record", async () => {
    const stored = await gw.record(failedCall);
    await owner
      .locator(`tr[data-request-id="${failedCall}"]`)
      .getByRole("button", { name: /Report a problem/ })
      .click();
    await owner.getByRole("heading", { level: 1, name: "New ticket" }).waitFor();
    await settled(owner);
    assert.equal(await owner.getByLabel("Kind").inputValue(), "problem");
    assert.equal(await owner.getByLabel("Request id").inputValue(), failedCall);
    assert.equal(await owner.getByLabel("Model").inputValue(), TEST_MODEL);
    assert.equal(await owner.getByLabel("Key").inputValue(), keyId);
    assert.match(
      await owner.getByLabel("Error returned").inputValue(),
      new RegExp(`${stored.status}.*${stored.http_status}`),
    );
    assert.notEqual(await owner.getByLabel("Time of the problem").inputValue(), "");
    assert.equal(JSON.parse(await owner.getByLabel("Main parameters").inputValue()).temperature, 0.9);
    await owner.getByLabel("Description").fill("The call failed with a 502; what happened upstream?");
    await owner.getByRole("button", { name: "Open ticket" }).click();
    await owner.getByText("Ticket opened.").waitFor();
    ticketPath = new URL(owner.url()).pathname.replace(/^\/console/, "");
    assert.match(ticketPath, /^\/tickets\/[A-Za-z0-9_-]+$/);
    const details = owner.locator("dl.details");
    assert.equal(await details.locator('[data-field="Request id"]').innerText(), failedCall);
    assert.equal(await details.locator('[data-field="Model"]').innerText(), TEST_MODEL);
    assert.match(await details.locator('[data-field="Key"]').innerText(), /^sk-/);
    assert.match(await details.locator('[data-field="Error returned"]').innerText(), /upstream_error/);
    assert.match(await details.locator('[data-field="Time of the problem"]').innerText(), /\d/);
    assert.match(await owner.locator('[data-field="Main parameters"]').innerText(), /"temperature": 0\.9/);
    // and it is in the list, open
    await go(owner, "Tickets");
    const row = owner.getByRole("row").filter({ hasText: failedCall });
    assert.match(await row.innerText(), /open/i);
  });

  test("an admin, in a second browser context, answers the ticket", async () => {
    await logIn(admin, gw.origin, ADMIN);
    await go(admin, "Administration");
    await admin.getByRole("link", { name: "All tickets" }).click();
    await settled(admin);
    const row = admin.getByRole("row").filter({ hasText: failedCall });
    assert.match(await row.innerText(), /Acme/); // admins see the account
    await row.getByRole("link").click();
    await settled(admin);
    await admin
      .getByLabel("Answer")
      .fill("The upstream answered 500; nothing was charged beyond the prompt.");
    await admin.getByRole("button", { name: "Send answer" }).click();
    await admin.getByText("Reply sent.").waitFor();
    await admin.locator(".ticket-meta").getByText("Answered").waitFor();
    assert.match(await admin.locator("ol.thread").innerText(), /nothing was charged beyond the prompt/);
  });

  test("an admin opens an account's pages and comes back to their own", async () => {
    await go(admin, "Administration");
    await admin.getByRole("row").filter({ hasText: "Acme" }).getByRole("button", { name: /^Open/ }).click();
    await admin.getByText("as an administrator").waitFor();
    await go(admin, "Keys");
    await admin.getByRole("row").filter({ hasText: "e2e-app" }).waitFor();
    await admin.getByRole("button", { name: "Back to my account" }).click();
    await admin.getByRole("row").filter({ hasText: "e2e-app" }).waitFor({ state: "detached" });
    await admin.getByText("No keys yet.").waitFor();
  });

  test("the owner sees the answer", async () => {
    await owner.goto(`${gw.origin}/console${ticketPath}`);
    await settled(owner);
    const thread = owner.locator("ol.thread");
    assert.match(await thread.innerText(), /nothing was charged beyond the prompt/);
    assert.match(await thread.innerText(), /Support/);
    assert.match(await owner.locator(".ticket-meta").innerText(), /Answered/);
  });

  test("an admin gives the key a monthly budget of what it spent: the owner sees it, and /v1 refuses the key", async () => {
    const resets = utcDate(Date.UTC(new Date().getUTCFullYear(), new Date().getUTCMonth() + 1, 1));
    await go(admin, "Administration");
    await admin
      .getByRole("navigation", { name: "Administration" })
      .getByRole("link", { name: "Keys" })
      .click();
    await settled(admin);
    const row = admin.getByRole("row").filter({ hasText: "e2e-app" });
    assert.match(await row.innerText(), /Acme[\s\S]*\$0\.000068\s+all time[\s\S]*none/);
    await row.getByRole("button", { name: /^Budget/ }).click();
    const dialog = admin.getByRole("dialog", { name: /^Budget of sk-/ });
    // what the form refuses never reaches the server
    await dialog.getByLabel("Budget (USD)").fill("-1");
    await dialog.getByRole("button", { name: "Save budget" }).click();
    await dialog.getByRole("alert").filter({ hasText: "The budget must not be negative" }).waitFor();
    await dialog.getByLabel("Budget (USD)").fill("0.000068");
    await dialog.getByLabel("Resets").selectOption("month");
    await dialog.getByRole("button", { name: "Save budget" }).click();
    await admin.getByRole("status").filter({ hasText: "saved" }).waitFor();
    await admin.getByRole("row").filter({ hasText: "/ month" }).waitFor();
    assert.match(
      await row.innerText(),
      new RegExp(
        `\\$0\\.000068\\s+this month[\\s\\S]*\\$0\\.000068 / month\\s+\\$0\\.00 left\\s+resets ${resets}\\s`,
      ),
    );
    const stored = await gw.gateway.deps.store.db
      .selectFrom("api_keys")
      .select(["budget_nanos", "budget_period"])
      .where("id", "=", keyId)
      .executeTakeFirstOrThrow();
    assert.deepEqual([Number(stored.budget_nanos), stored.budget_period], [OK_CALL_NANOS, "month"]);

    await go(owner, "Keys");
    const mine = owner.getByRole("row").filter({ hasText: "e2e-app" });
    await mine.getByText("/ month").waitFor();
    assert.match(await mine.innerText(), new RegExp(`\\$0\\.00 left\\s+resets ${resets}`));
    assert.match(await mine.innerText(), /\$0\.000068\s+this month/);

    const client = new OpenAI({ apiKey: secret, baseURL: gw.baseURL, maxRetries: 0 });
    const refused = await client.chat.completions
      .create({ model: TEST_MODEL, messages: [{ role: "user", content: "one more" }], max_tokens: 5 })
      .then(
        () => null,
        (err: unknown) => err,
      );
    assert.ok(refused instanceof APIError, String(refused));
    assert.equal(refused.status, 429);
    assert.equal(refused.code, "budget_exceeded");
    assert.match(refused.message, /API key's budget/);
  });

  test("an admin gives the account a monthly budget; the owner's overview shows what is left and the reset", async () => {
    const resets = utcDate(Date.UTC(new Date().getUTCFullYear(), new Date().getUTCMonth() + 1, 1));
    await go(admin, "Administration");
    const row = admin.getByRole("row").filter({ hasText: "Acme" });
    await row.getByRole("button", { name: /^Edit/ }).click();
    const edit = admin.getByRole("dialog", { name: "Edit Acme" });
    await edit.getByLabel("Budget (USD)").fill("25");
    await edit.getByLabel("Resets").selectOption("month");
    await edit.getByRole("button", { name: "Save" }).click();
    await admin.getByRole("status").filter({ hasText: "Account Acme saved" }).waitFor();
    await row.getByText("$25.00 / month").waitFor();
    await go(owner, "Overview");
    const budget = owner.getByTestId("budget");
    assert.equal(await budget.locator(".stat-value").innerText(), "$24.999932 left");
    assert.equal(
      await budget.locator("p.small").innerText(),
      `$0.000068 spent of $25.00 this month; resets ${resets}, 00:00 UTC`,
    );
    await owner.screenshot({ path: join(SHOTS, "overview-budget-1280.png") });
  });

  test("a member sees the account but no owner actions", async () => {
    const context = await browser.newContext({ viewport: WIDE });
    try {
      const member = await context.newPage();
      await logIn(member, gw.origin, MEMBER);
      await member.goto(`${gw.origin}/console/keys`);
      await settled(member);
      await member.getByRole("row").filter({ hasText: "e2e-app" }).waitFor();
      assert.equal(await member.getByRole("button", { name: "Create key" }).count(), 0);
      assert.equal(await member.getByRole("button", { name: /^(Edit|Disable|Delete)/ }).count(), 0);
      await member.goto(`${gw.origin}/console${ticketPath}`);
      await settled(member);
      assert.equal(await member.getByRole("button", { name: "Close ticket" }).count(), 0);
      assert.equal(await member.getByRole("button", { name: "Send reply" }).count(), 1);
    } finally {
      await context.close();
    }
  });

  test("the owner renames, limits, disables, enables and deletes a key", async () => {
    await go(owner, "Keys");
    await owner.getByRole("button", { name: "Create key" }).click();
    await owner.getByRole("dialog", { name: "Create a key" }).getByLabel("Name").fill("temporary");
    await owner
      .getByRole("dialog", { name: "Create a key" })
      .getByRole("button", { name: "Create key" })
      .click();
    const shown = owner.getByRole("dialog", { name: "Your new key" });
    const temporarySecret = await shown.getByLabel("API key").inputValue();
    await shown.getByRole("button", { name: "I have copied it" }).click();
    const row = () => owner.getByRole("row").filter({ hasText: /temporary|batch-job/ });
    await row().getByRole("button", { name: /^Edit/ }).click();
    const edit = owner.getByRole("dialog", { name: /^Edit key/ });
    await edit.getByLabel("Name").fill("batch-job");
    await edit.getByLabel("Token limit").fill("500");
    await edit.getByRole("button", { name: "Save" }).click();
    await owner.getByRole("status").filter({ hasText: "saved" }).waitFor();
    // the status shows as soon as the change is saved; the list follows when it has reloaded
    await owner.getByRole("row").filter({ hasText: "batch-job" }).waitFor();
    assert.match(await row().innerText(), /batch-job[\s\S]*500/);
    await row()
      .getByRole("button", { name: /^Disable/ })
      .click();
    await row().getByText("disabled", { exact: true }).waitFor();
    // the console's change reaches /v1 at once
    const client = new OpenAI({ apiKey: temporarySecret, baseURL: gw.baseURL, maxRetries: 0 });
    const refused = await client.models.list().then(
      () => null,
      (err: unknown) => err,
    );
    assert.ok(
      refused instanceof APIError && refused.status === 403,
      `a disabled key is refused: ${String(refused)}`,
    );
    await row()
      .getByRole("button", { name: /^Enable/ })
      .click();
    await row().getByText("enabled", { exact: true }).waitFor();
    await row()
      .getByRole("button", { name: /^Delete/ })
      .click();
    const confirm = owner.getByRole("dialog", { name: "Delete this key?" });
    // the safe choice has the focus, so Enter does not delete by accident
    assert.equal(await confirm.locator(":focus").textContent(), "Keep the key");
    await confirm.getByRole("button", { name: "Delete key" }).click();
    await row().waitFor({ state: "detached" });
    const gone = await client.models.list().then(
      () => null,
      (err: unknown) => err,
    );
    assert.ok(gone instanceof APIError && gone.status === 401, `a deleted key is refused: ${String(gone)}`);
  });

  test("the admin's forms send one request however often they are submitted", async () => {
    const db = gw.gateway.deps.store.db;
    /** requests the gateway answered for each form, submitted twice */
    const answered: Record<string, number> = {};
    await go(admin, "Administration");
    await admin.getByRole("button", { name: "Create account" }).click();
    const create = admin.getByRole("dialog", { name: "Create an account" });
    await create.getByLabel("Name").fill("Northwind");
    const createButton = create.getByRole("button", { name: "Create account" });
    answered["create account"] = await answeredAfter(gw, admin, doubleClick(createButton));
    await admin.getByRole("status").filter({ hasText: "Account Northwind created" }).waitFor();
    const accounts = await db.selectFrom("accounts").select("id").where("name", "=", "Northwind").execute();
    assert.equal(accounts.length, 1);
    const northwind = accounts[0]!.id;

    await admin
      .getByRole("row")
      .filter({ hasText: "Northwind" })
      .getByRole("button", { name: /^Edit/ })
      .click();
    const edit = admin.getByRole("dialog", { name: "Edit Northwind" });
    await edit.getByLabel("Quota (tokens)").fill("2,000");
    const save = edit.getByRole("button", { name: "Save" });
    answered["edit account"] = await answeredAfter(gw, admin, doubleClick(save));
    await admin.getByRole("status").filter({ hasText: "Account Northwind saved" }).waitFor();

    await admin.getByRole("link", { name: "Users" }).click();
    await settled(admin);
    await admin.getByRole("button", { name: "Create user" }).click();
    const newUser = admin.getByRole("dialog", { name: "Create a user" });
    await newUser.getByLabel("E-mail").fill("dora@northwind.test");
    await newUser.getByLabel("Account").selectOption(northwind);
    await newUser.getByLabel("Password").fill("dora-password-1234");
    const createUser = newUser.getByRole("button", { name: "Create user" });
    answered["create user"] = await answeredAfter(gw, admin, doubleClick(createUser));
    await admin.getByRole("status").filter({ hasText: "User dora@northwind.test created" }).waitFor();
    const dora = admin.getByRole("row").filter({ hasText: "dora@northwind.test" });

    await dora.getByRole("button", { name: /^Role/ }).click();
    const role = admin.getByRole("dialog", { name: "Role of dora@northwind.test" });
    await role.getByLabel("Role").selectOption("member");
    const saveRole = role.getByRole("button", { name: "Save role" });
    answered.role = await answeredAfter(gw, admin, doubleClick(saveRole));
    await admin.getByRole("status").filter({ hasText: "dora@northwind.test is now member" }).waitFor();

    await dora.getByRole("button", { name: /^Reset password/ }).click();
    const reset = admin.getByRole("dialog", { name: "Reset the password of dora@northwind.test" });
    await reset.getByLabel("New password", { exact: true }).fill("dora-password-5678");
    const again = reset.getByLabel("New password, again");
    await again.fill("dora-password-5678");
    // Enter in a field submits the form (twice: pressed twice before the answer)
    const enterTwice = async () => {
      await again.press("Enter");
      await again.press("Enter");
    };
    answered["reset password"] = await answeredAfter(gw, admin, enterTwice);
    await admin.getByRole("status").filter({ hasText: "Password of dora@northwind.test reset" }).waitFor();
    await admin
      .getByRole("navigation", { name: "Administration" })
      .getByRole("link", { name: "Keys" })
      .click();
    await settled(admin);
    await admin
      .getByRole("row")
      .filter({ hasText: "e2e-app" })
      .getByRole("button", { name: /^Budget/ })
      .click();
    const keyBudget = admin.getByRole("dialog", { name: /^Budget of sk-/ });
    await keyBudget.getByLabel("Budget (USD)").fill("0.0001");
    answered["key budget"] = await answeredAfter(
      gw,
      admin,
      doubleClick(keyBudget.getByRole("button", { name: "Save budget" })),
    );
    await admin.getByRole("status").filter({ hasText: "saved" }).waitFor();
    assert.deepEqual(answered, {
      "key budget": 1,
      "create account": 1,
      "edit account": 1,
      "create user": 1,
      role: 1,
      "reset password": 1,
    });
  });

  test("the plan page says how content safety treats the account's streams", async () => {
    await owner.goto(`${gw.origin}/console/plan`);
    const mode = owner.getByTestId("safety-mode");
    await mode.waitFor();
    assert.match(await mode.innerText(), /^off/);
  });

  test("every page, captured at 1280 and 390 px, without horizontal overflow at 390", async () => {
    const ownerPages: [string, string][] = [
      ["/", "overview"],
      ["/keys", "keys"],
      ["/records", "records-today"],
      ["/records?view=year", "records-year"],
      ["/models", "models"],
      ["/tickets", "tickets"],
      [ticketPath, "ticket"],
      ["/tickets/new", "ticket-new"],
      ["/plan", "plan"],
    ];
    for (const [path, name] of ownerPages) await capture(owner, path, name);
    const adminPages: [string, string][] = [
      ["/admin/accounts", "admin-accounts"],
      ["/admin/keys", "admin-keys"],
      ["/admin/users", "admin-users"],
      ["/admin/tickets", "admin-tickets"],
    ];
    for (const [path, name] of adminPages) await capture(admin, path, name);
    // the narrow layout collapses the navigation behind a button
    await owner.setViewportSize(NARROW);
    await owner.goto(`${gw.origin}/console/`);
    await settled(owner);
    const navLink = owner
      .getByRole("navigation", { name: "Console" })
      .getByRole("link", { name: "Call records" });
    assert.equal(await navLink.isVisible(), false);
    await owner.getByRole("button", { name: "Menu" }).click();
    assert.equal(await navLink.isVisible(), true);
    await owner.screenshot({ path: join(SHOTS, "menu-open-390.png") });
    await owner.setViewportSize(WIDE);
  });

  test("the pages ran without script errors or policy violations", () => {
    assert.deepEqual(pageErrors, []);
  });

  test("signing out returns to the login page, and pages need a new login", async () => {
    await owner.getByRole("button", { name: "Sign out" }).click();
    await owner.getByRole("heading", { name: "Sign in" }).waitFor();
    await owner.goto(`${gw.origin}/console/keys`);
    await owner.getByRole("heading", { name: "Sign in" }).waitFor();
    const res = await owner.request.get(`${gw.origin}/api/console/keys`);
    assert.equal(res.status(), 401);
  });
});
