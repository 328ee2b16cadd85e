// A call record with every column, for tests that write records themselves.
import { newId } from "../../src/accounts/key-format.ts";
import type { CallRecord } from "../../src/records/call-record.ts";

/** An answered call of `tokens` prompt tokens, charged as the upstream reported them. */
export function callRecord(overrides: Partial<CallRecord> = {}): CallRecord {
  const prompt = overrides.prompt_tokens ?? 0;
  const completion = overrides.completion_tokens ?? 0;
  return {
    request_id: newId("req"),
    created_at: Date.now(),
    api: "chat.completions",
    account_id: null,
    key_id: null,
    public_model: "demo",
    upstream_model: "demo-echo",
    provider: "demo",
    params: null,
    stream: 0,
    status: "ok",
    http_status: 200,
    error_code: null,
    prompt_tokens: prompt,
    completion_tokens: completion,
    total_tokens: prompt + completion,
    uncharged_tokens: 0,
    cached_tokens: 0,
    cache_write_tokens: 0,
    reasoning_tokens: 0,
    attempts: null,
    reserved_tokens: 0,
    overrun_tokens: 0,
    usage_source: "upstream",
    latency_ms: 1,
    ttft_ms: null,
    safety_mode: null,
    safety_verdict: null,
    safety_categories: null,
    safety_ms: null,
    cost_nanos: 0,
    uncharged_cost_nanos: 0,
    cost_source: null,
    session_id: null,
    session_client: null,
    ...overrides,
  };
}
