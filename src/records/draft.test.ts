import assert from "node:assert/strict";
import { describe, it } from "node:test";
import { setTimeout as sleep } from "node:timers/promises";
import { ANSWERED, CLIENT_GONE } from "../domain/outcomes.ts";
import { CallDraft } from "./draft.ts";

describe("CallDraft latency", () => {
  it("runs until the record is made", async () => {
    const draft = new CallDraft("req_test_1");
    await sleep(20);
    assert.ok(draft.finish(ANSWERED).latency_ms >= 20);
  });

  it("stops where the call ended, not where its record was made after a wait", async () => {
    const draft = new CallDraft("req_test_2");
    await sleep(10);
    draft.markEnded();
    const atEnd = draft.elapsedMs();
    await sleep(50); // an estimate counted off the event loop, say
    draft.markEnded(); // a second mark does not move it
    const record = draft.finish(CLIENT_GONE);
    assert.ok(record.latency_ms >= 10 && record.latency_ms <= atEnd);
    assert.ok(draft.elapsedMs() - record.latency_ms >= 50);
  });
});
