// Which fields of a catalog entry are secrets, and how they are shown: a provider's upstream
// keys (`api_keys`) and its extra headers' values (an organisation token, another gateway's
// key). They are stored sealed (./secret-box.ts) apart from the entry's other fields, and
// every view of an entry (the admin API, the console, the audit log) shows them masked.
import { keyHint } from "../providers/key-pool.ts";
import type { CatalogEntry, CatalogKind } from "./types.ts";

export interface ProviderSecrets {
  api_keys?: string[];
  headers?: Record<string, string>;
}

/** What a masked secret shows: the key pools' hint (at most its last four characters). */
export const secretHint = keyHint;

/** The entry without its secrets, and the secrets (undefined: none). */
export function splitSecrets(
  kind: CatalogKind,
  entry: CatalogEntry,
): { body: CatalogEntry; secrets: ProviderSecrets | undefined } {
  if (kind !== "providers") return { body: entry, secrets: undefined };
  const { api_keys, headers, ...body } = entry as CatalogEntry & ProviderSecrets;
  const secrets: ProviderSecrets = {};
  if (api_keys !== undefined) secrets.api_keys = api_keys;
  if (headers !== undefined && Object.keys(headers).length) secrets.headers = headers;
  return { body: body as CatalogEntry, secrets: Object.keys(secrets).length ? secrets : undefined };
}

export function joinSecrets(body: CatalogEntry, secrets: ProviderSecrets | undefined): CatalogEntry {
  return secrets ? { ...body, ...secrets } : body;
}

/** The entry as views show it: each secret as its hint. */
export function maskEntry(kind: CatalogKind, entry: CatalogEntry): CatalogEntry {
  const { body, secrets } = splitSecrets(kind, entry);
  if (!secrets) return body;
  const masked: CatalogEntry = { ...body };
  if (secrets.api_keys) masked.api_keys = secrets.api_keys.map(secretHint);
  if (secrets.headers)
    masked.headers = Object.fromEntries(Object.entries(secrets.headers).map(([k, v]) => [k, secretHint(v)]));
  return masked;
}

/**
 * A provider patch whose secrets came back masked (a console that read the entry and sends it
 * back edited): each hint that matches a secret the entry holds stands for that secret, so a
 * round trip through a view keeps the keys it did not change.
 */
export function unmaskPatch(current: CatalogEntry, patch: Record<string, unknown>): Record<string, unknown> {
  const held = current as CatalogEntry & ProviderSecrets;
  const out = { ...patch };
  if (Array.isArray(patch.api_keys) && held.api_keys) {
    const byHint = new Map(held.api_keys.map((k) => [secretHint(k), k]));
    out.api_keys = patch.api_keys.map((k) =>
      typeof k === "string" && k.startsWith("…") && byHint.has(k) ? byHint.get(k) : k,
    );
  }
  if (patch.headers && typeof patch.headers === "object" && held.headers) {
    out.headers = Object.fromEntries(
      Object.entries(patch.headers as Record<string, unknown>).map(([name, v]) => {
        const before = held.headers?.[name];
        return [name, before !== undefined && v === secretHint(before) ? before : v];
      }),
    );
  }
  return out;
}
