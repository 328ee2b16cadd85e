import assert from "node:assert/strict";
import { describe, test } from "node:test";
import { FakeLedger, FakeRates, reservation } from "../../test/support/fake-holds.ts";
import type { Account } from "../accounts/accounts.ts";
import type { ApiKey } from "../accounts/keys.ts";
import type { AuthContext } from "../auth/key-cache.ts";
import { type PlanConfig, planSchema } from "../config/schema.ts";
import type { CallSession } from "../domain/sessions.ts";
import { GatewayError } from "../errors/index.ts";
import type { RateTicket } from "../rate-limits/rate-limiter.ts";
import type { Budget } from "./budget.ts";
import { admit, admitRequest, Hold, type HoldDeps } from "./hold.ts";

/** 17 May 2026, noon UTC: a monthly budget resets on 1 June. */
const NOW = Date.UTC(2026, 4, 17, 12);

const BUDGET: Budget = {
  promptBound: 100,
  perRequestOverhead: 32,
  outputBound: 400,
  choices: 1,
  wanted: 500,
  minimum: 116,
  cost: { fixed: 1_000, perToken: 10, promptTokens: 100 },
};

const PLAN: PlanConfig = planSchema.parse({
  id: "pro",
  quota_tokens: 5_000,
  rate_limits: { key: { rpm: 10, tpm: 1_000 }, account: { rpm: 20 } },
});

function auth(account: Partial<Account> = {}, key: Partial<ApiKey> = {}): AuthContext {
  const money = { budget_nanos: null, budget_period: "none", spent_nanos: 0, month_spent_nanos: 0 };
  return {
    account: {
      id: "acc_1",
      name: "alice",
      plan_id: "pro",
      quota_tokens: null,
      used_tokens: 40,
      reserved_tokens: 0,
      reserved_nanos: 0,
      ...money,
      spent_month: "",
      disabled: 0,
      created_at: 0,
      safety: null,
      safety_streaming: null,
      ...account,
    },
    key: {
      id: "key_1",
      account_id: "acc_1",
      name: null,
      prefix: "sk-abc",
      limit_tokens: 900,
      used_tokens: 7,
      ...money,
      spent_month: "",
      disabled: 0,
      created_at: 0,
      rpm_limit: null,
      tpm_limit: null,
      allowed_models: null,
      session_limit_tokens: null,
      session_budget_nanos: null,
      ...key,
    },
  };
}

function setup() {
  const ledger = new FakeLedger();
  const rates = new FakeRates();
  const deps: HoldDeps = { ledger, rates, now: () => NOW };
  const headers: Record<string, string>[] = [];
  const setHeaders = (h: Record<string, string>) => headers.push(h);
  return { ledger, rates, deps, headers, setHeaders };
}

const TICKET: RateTicket = { subjects: [], tokens: 0 };
const WINDOW_HEADERS = {
  "x-ratelimit-limit-requests": "60",
  "x-ratelimit-remaining-requests": "59",
  "x-ratelimit-reset-requests": "1s",
};

/** Asserts `promise` rejects with the catalog's `name`; returns the error for more checks. */
async function refusedWith(promise: Promise<unknown>, name: string): Promise<GatewayError> {
  const err = await promise.then(
    () => assert.fail(`expected ${name}`),
    (e: unknown) => e,
  );
  assert.ok(err instanceof GatewayError, String(err));
  assert.equal(err.errorName, name);
  return err;
}

describe("Hold.close", () => {
  const held = () => {
    const { ledger, rates, deps } = setup();
    const r = reservation(500, 2_000);
    return { ledger, rates, r, hold: new Hold(deps, r, TICKET, BUDGET) };
  };

  test("charges the tokens and nanodollars given, and gives the rest of the rate ticket back", async () => {
    const { ledger, rates, r, hold } = held();
    await hold.close(120, 900);
    assert.deepEqual(ledger.closes(), [{ op: "settle", reservation: r, tokens: 120, nanos: 900 }]);
    assert.deepEqual(rates.settles(), [{ op: "settle", ticket: TICKET, tokens: 120 }]);
  });

  test("with nothing to charge, releases the whole reservation", async () => {
    for (const close of [(h: Hold) => h.close(0), (h: Hold) => h.close(0, 0)]) {
      const { ledger, rates, r, hold } = held();
      await close(hold);
      assert.deepEqual(ledger.closes(), [{ op: "release", reservation: r }]);
      assert.deepEqual(rates.settles(), [{ op: "settle", ticket: TICKET, tokens: 0 }]);
    }
  });

  test("money without tokens is a charge, not a release", async () => {
    const { ledger, r, hold } = held();
    await hold.close(0, 5);
    assert.deepEqual(ledger.closes(), [{ op: "settle", reservation: r, tokens: 0, nanos: 5 }]);
  });

  test("the first close decides: later ones, whatever their figures, do nothing", async () => {
    const { ledger, rates, r, hold } = held();
    await hold.close(120, 900);
    await hold.close(0);
    await hold.close(499, 1_999);
    assert.deepEqual(ledger.closes(), [{ op: "settle", reservation: r, tokens: 120, nanos: 900 }]);
    assert.equal(rates.settles().length, 1);
  });

  test("closes racing each other (none awaited first) close once", async () => {
    const { ledger, rates, r, hold } = held();
    await Promise.all([hold.close(10, 1), hold.close(0), hold.close(20, 2)]);
    assert.deepEqual(ledger.closes(), [{ op: "settle", reservation: r, tokens: 10, nanos: 1 }]);
    assert.equal(rates.settles().length, 1);
  });

  test("a close the ledger fails is not tried again: the ledger is told once, as it must be", async () => {
    const { ledger, rates, hold } = held();
    ledger.failure = new Error("store down");
    await assert.rejects(hold.close(120, 900), /store down/);
    await hold.close(0);
    assert.equal(ledger.closes().length, 1);
    assert.equal(rates.settles().length, 1, "the rate ticket was given back before the ledger failed");
  });
});

describe("admitRequest", () => {
  test("takes one request and no tokens from the key's and the account's windows", async () => {
    const { rates, headers, setHeaders } = setup();
    const ticket = await admitRequest(rates, auth({}, { rpm_limit: 3 }), PLAN, setHeaders);
    assert.deepEqual(rates.calls, [
      {
        op: "admit",
        subjects: [
          { id: "key:key_1", rpm: 3, tpm: 1_000 },
          { id: "account:acc_1", rpm: 20, tpm: undefined },
        ],
        tokens: 0,
      },
    ]);
    assert.deepEqual(ticket, { subjects: (rates.calls[0] as { subjects: unknown }).subjects, tokens: 0 });
    assert.deepEqual(headers, [WINDOW_HEADERS]);
  });

  test("a refusal is the catalog's 429 with the waits the SDKs honour, headers set all the same", async () => {
    const cases = [
      { kind: "requests", retryAfterMs: 200, name: "rate_limited_requests", seconds: "1" },
      { kind: "tokens", retryAfterMs: 2_500, name: "rate_limited_tokens", seconds: "3" },
    ] as const;
    for (const c of cases) {
      const { rates, headers, setHeaders } = setup();
      rates.refuseRequest = { ok: false, kind: c.kind, retryAfterMs: c.retryAfterMs };
      const err = await refusedWith(admitRequest(rates, auth(), PLAN, setHeaders), c.name);
      assert.equal(err.headers?.["retry-after"], c.seconds);
      assert.equal(err.headers?.["retry-after-ms"], String(c.retryAfterMs));
      assert.deepEqual(headers, [WINDOW_HEADERS]);
    }
  });
});

describe("admit", () => {
  test("both admit: the rate limits' tokens, then the ledger's hold, closed together", async () => {
    const { ledger, rates, deps, headers, setHeaders } = setup();
    const signal = new AbortController().signal;
    const hold = await admit(deps, auth(), PLAN, TICKET, BUDGET, setHeaders, signal);
    assert.deepEqual(rates.calls, [{ op: "admitTokens", ticket: TICKET, tokens: 500 }]);
    assert.deepEqual(headers, [WINDOW_HEADERS]);
    const [reserve] = ledger.calls;
    assert.ok(reserve?.op === "reserve");
    assert.equal(reserve.wanted, 500);
    assert.equal(reserve.minimum, 116);
    assert.equal(reserve.options?.signal, signal, "the client's leaving stops the ledger's wait");
    assert.equal(reserve.options?.cost, BUDGET.cost);
    assert.equal(hold.budget, BUDGET);
    assert.equal(hold.reservation.tokens, 500);

    await hold.close(300);
    // the ticket admitTokens answered, which holds the tokens taken: not the request's own
    assert.deepEqual(rates.settles(), [{ op: "settle", ticket: { subjects: [], tokens: 500 }, tokens: 300 }]);
    assert.deepEqual(ledger.closes(), [
      { op: "settle", reservation: hold.reservation, tokens: 300, nanos: 0 },
    ]);
  });

  test("the ledger is told the limits in force: the account's own quota, else the plan's, else none", async () => {
    const subjectOf = async (a: AuthContext, plan: PlanConfig | undefined) => {
      const { ledger, deps, setHeaders } = setup();
      await admit(deps, a, plan, TICKET, BUDGET, setHeaders);
      const [reserve] = ledger.calls;
      assert.ok(reserve?.op === "reserve");
      return reserve.subject;
    };
    const monthly = {
      budget_nanos: 5_000,
      budget_period: "month",
      spent_nanos: 300,
      month_spent_nanos: 200,
      spent_month: "2026-05",
    };
    assert.deepEqual(await subjectOf(auth(monthly, { budget_nanos: 70, budget_period: "week" }), PLAN), {
      accountId: "acc_1",
      accountQuota: 5_000,
      accountUsed: 40,
      keyId: "key_1",
      keyLimit: 900,
      keyUsed: 7,
      accountBudget: { limit: 5_000, period: "month" },
      accountSpent: { total: 300, month: 200, monthKey: "2026-05" },
      // a period it does not know is no period: the budget never resets
      keyBudget: { limit: 70, period: "none" },
      keySpent: { total: 0, month: 0, monthKey: "" },
    });
    const own = await subjectOf(auth({ quota_tokens: 12 }, { limit_tokens: null }), PLAN);
    assert.equal(own.accountQuota, 12);
    assert.equal(own.keyLimit, null);
    assert.equal(own.accountBudget, null);
    assert.equal((await subjectOf(auth(), undefined)).accountQuota, 0);
  });

  test("the rate limits refuse the tokens: the 429, and the ledger is never asked", async () => {
    const { ledger, rates, deps, headers, setHeaders } = setup();
    rates.refuseTokens = { ok: false, kind: "tokens", retryAfterMs: 1_500 };
    const err = await refusedWith(
      admit(deps, auth(), PLAN, TICKET, BUDGET, setHeaders),
      "rate_limited_tokens",
    );
    assert.equal(err.headers?.["retry-after"], "2");
    assert.deepEqual(ledger.calls, []);
    assert.deepEqual(rates.settles(), [], "nothing was taken: nothing to give back");
    assert.deepEqual(headers, [WINDOW_HEADERS]);
  });

  test("the ledger refuses after the rate limits admitted: their tokens are given back, the request stays counted", async () => {
    const { ledger, rates, deps, setHeaders } = setup();
    ledger.answer = () => ({ ok: false, reason: "quota", remaining: 30, held: false });
    await refusedWith(admit(deps, auth(), PLAN, TICKET, BUDGET, setHeaders), "quota_exceeded");
    assert.deepEqual(rates.settles(), [{ op: "settle", ticket: { subjects: [], tokens: 500 }, tokens: 0 }]);
    assert.deepEqual(ledger.closes(), []);
    assert.equal(ledger.openReservations(), 0);
  });

  test("a ledger that fails after the rate limits admitted: their tokens are given back, its error thrown", async () => {
    const { ledger, rates, deps, setHeaders } = setup();
    const failure = new GatewayError("ledger_unavailable");
    ledger.answer = () => {
      throw failure;
    };
    await assert.rejects(admit(deps, auth(), PLAN, TICKET, BUDGET, setHeaders), failure);
    assert.deepEqual(rates.settles(), [{ op: "settle", ticket: { subjects: [], tokens: 500 }, tokens: 0 }]);
    assert.equal(ledger.openReservations(), 0);
  });

  test("each ledger refusal is its catalog's 429, saying what is left and when it resets", async () => {
    const month = {
      budget_nanos: 5_000_000_000,
      budget_period: "month",
      spent_nanos: 0,
      month_spent_nanos: 0,
      spent_month: "",
    };
    const budgeted = auth(month, { budget_nanos: 1_000_000_000 });
    const cases = [
      {
        reason: "quota",
        remaining: 30,
        held: false,
        name: "quota_exceeded",
        message: /quota cannot cover this request \(30 tokens left\)/,
      },
      {
        reason: "quota",
        remaining: 30,
        held: true,
        name: "limit_held",
        message: /quota has 30 tokens left, held by calls still in flight/,
      },
      {
        reason: "key_limit",
        remaining: 4,
        held: false,
        name: "key_limit_exceeded",
        message: /^This API key's token limit cannot cover this request \(4 tokens left\)/,
      },
      {
        reason: "key_limit",
        remaining: 4,
        held: true,
        name: "limit_held",
        message: /^This API key's token limit has 4 tokens left/,
      },
      {
        reason: "account_budget",
        remaining: 1_250_000_000,
        held: false,
        name: "budget_exceeded",
        message:
          /^The account's budget cannot cover this request \(\$1\.25 left; it resets at 2026-06-01T00:00:00\.000Z\)/,
      },
      {
        reason: "key_budget",
        remaining: 25_000_000,
        held: false,
        name: "budget_exceeded",
        message: /^This API key's budget cannot cover this request \(\$0\.025 left; it does not reset\)/,
      },
      {
        reason: "key_budget",
        remaining: 25_000_000,
        held: true,
        name: "limit_held",
        message: /^This API key's budget has \$0\.025 left, held by calls still in flight/,
      },
    ] as const;
    for (const c of cases) {
      const { ledger, rates, deps, setHeaders } = setup();
      ledger.answer = () => ({ ok: false, reason: c.reason, remaining: c.remaining, held: c.held });
      const err = await refusedWith(admit(deps, budgeted, PLAN, TICKET, BUDGET, setHeaders), c.name);
      assert.match(err.message, c.message, `${c.reason} held=${c.held}`);
      assert.equal(rates.settles().length, 1, "the rate limits' tokens are given back");
    }
  });

  test("a call's session is held only when its key caps sessions", async () => {
    const subjectOf = async (a: AuthContext, session: CallSession | null) => {
      const { ledger, deps, setHeaders } = setup();
      await admit(deps, a, PLAN, TICKET, BUDGET, setHeaders, undefined, session);
      const [reserve] = ledger.calls;
      assert.ok(reserve?.op === "reserve");
      return reserve.subject;
    };
    const run = { id: "run-1", client: "codex" } as const;
    assert.ok(!("session" in (await subjectOf(auth(), run))), "no caps: nothing for the session");
    const capped = auth({}, { session_limit_tokens: 5_000 });
    assert.ok(!("session" in (await subjectOf(capped, null))), "no session: nothing either");
    assert.deepEqual((await subjectOf(capped, run)).session, {
      id: "run-1",
      limitTokens: 5_000,
      budgetNanos: null,
    });
    assert.deepEqual((await subjectOf(auth({}, { session_budget_nanos: 70 }), run)).session, {
      id: "run-1",
      limitTokens: null,
      budgetNanos: 70,
    });
  });

  test("a session cap's refusal names the cap and the session", async () => {
    const caps = auth({}, { session_limit_tokens: 5_000, session_budget_nanos: 2_000_000_000 });
    const run = { id: "run-7", client: "claude-code" } as const;
    const cases = [
      {
        reason: "session_limit",
        remaining: 12,
        held: false,
        name: "session_limit_exceeded",
        message:
          /^This API key's per-session limit of 5000 tokens cannot cover this request in session 'run-7' \(12 tokens left\)/,
      },
      {
        reason: "session_budget",
        remaining: 500_000_000,
        held: false,
        name: "session_budget_exceeded",
        message:
          /^This API key's per-session budget of \$2 cannot cover this request in session 'run-7' \(\$0\.5 left\)/,
      },
      {
        reason: "session_limit",
        remaining: 12,
        held: true,
        name: "limit_held",
        message:
          /^This API key's per-session limit of 5000 tokens leaves session 'run-7' 12 tokens, held by its calls/,
      },
    ] as const;
    for (const c of cases) {
      const { ledger, deps, setHeaders } = setup();
      ledger.answer = () => ({ ok: false, reason: c.reason, remaining: c.remaining, held: c.held });
      const err = await refusedWith(
        admit(deps, caps, PLAN, TICKET, BUDGET, setHeaders, undefined, run),
        c.name,
      );
      assert.match(err.message, c.message, `${c.reason} held=${c.held}`);
    }
  });
});
