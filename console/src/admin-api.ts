// The admin API (/admin/v1) as the operator pages call it: the console API's fetch, errors
// and expired-session handling (api.ts), but none of its account scope, since every call here
// is about the whole gateway. It takes the console's session cookie for users with role admin.

import { useCallback, useEffect, useRef, useState } from "react";
import type {
  AdminApiKeyView,
  AdminKeyPatch,
  AdminList,
  AdminRecordView,
  AdminScope,
  AdminTokenCreated,
  AdminTokenView,
  AuditEntryView,
  CatalogEntry,
  CatalogKind,
  CatalogState,
  ProviderTestResult,
  UpstreamKeyState,
  UsageGroup,
  UsageRow,
} from "./admin-types.ts";
import { type ApiError, type CallOptions, type Loaded, request, useGet, useLoad, withQuery } from "./api.ts";

export const ADMIN_API = "/admin/v1";

type Query = CallOptions["query"];

export function adminUrl(path: string, query: Query = {}): string {
  return withQuery(`${ADMIN_API}${path}`, query);
}

export function adminApi<T>(path: string, options: CallOptions = {}): Promise<T> {
  return request<T>(adminUrl(path, options.query), options);
}

/** GETs `path` of the admin API, as useApi() does the console API's; null: not yet. */
export function useAdminApi<T>(path: string | null, query: Query = {}): Loaded<T> {
  return useGet<T>(path === null ? null : adminUrl(path, query));
}

/** A list's pages followed to its end: the catalog, keys and tokens are shown whole. */
const MAX_PAGES = 100;

export async function fetchAll<T>(path: string, signal?: AbortSignal): Promise<AdminList<T>> {
  const data: T[] = [];
  let cursor: string | null = null;
  for (let page = 0; page < MAX_PAGES; page++) {
    const answer: AdminList<T> = await adminApi<AdminList<T>>(path, { query: { cursor }, signal });
    data.push(...answer.data);
    if (!answer.has_more || !answer.next_cursor) break;
    cursor = answer.next_cursor;
  }
  return { object: "list", data, has_more: false, next_cursor: null };
}

/** A whole list of the admin API, every page of it. */
export function useAdminList<T>(path: string): Loaded<AdminList<T>> {
  return useLoad(adminUrl(path), (signal) => fetchAll<T>(path, signal));
}

const one = (id: string) => `/${encodeURIComponent(id)}`;

// The catalog: providers, models, plans, as the configuration file writes them.

export const catalogState = () => adminApi<CatalogState>("/catalog");

export function createEntry<T extends CatalogEntry>(kind: CatalogKind, entry: T): Promise<T> {
  return adminApi<T>(`/${kind}`, { method: "POST", body: entry });
}

/** Changes the given top-level fields; null removes one (back to its default). */
export function updateEntry<T extends CatalogEntry>(
  kind: CatalogKind,
  id: string,
  patch: Record<string, unknown>,
): Promise<T> {
  return adminApi<T>(`/${kind}${one(id)}`, { method: "PATCH", body: patch });
}

export function deleteEntry(kind: CatalogKind, id: string): Promise<void> {
  return adminApi<void>(`/${kind}${one(id)}`, { method: "DELETE" });
}

/** One call of one token through the provider; `model` is an upstream model name. */
export function testProvider(id: string, model?: string): Promise<ProviderTestResult> {
  return adminApi<ProviderTestResult>(`/providers${one(id)}/test`, {
    method: "POST",
    body: model ? { model } : {},
  });
}

export const providerKeysPath = (id: string) => `/providers${one(id)}/keys`;
export type ProviderKeysAnswer = { data: UpstreamKeyState[] };

// Usage and records across accounts.

export interface UsageQuery {
  /** Unix ms, or a UTC day YYYY-MM-DD */
  from: number | string;
  to: number | string;
  group_by: UsageGroup;
  account?: string;
  model?: string;
  provider?: string;
}

export function usage(q: UsageQuery, signal?: AbortSignal): Promise<{ data: UsageRow[] }> {
  return adminApi<{ data: UsageRow[] }>("/usage", { query: { ...q }, signal });
}

export interface RecordsQuery {
  from?: number;
  to?: number;
  account?: string;
  key?: string;
  model?: string;
  status?: string;
  request_id?: string;
  api?: string;
}

export function records(
  q: RecordsQuery & { limit?: number; cursor?: string | null },
  signal?: AbortSignal,
): Promise<AdminList<AdminRecordView>> {
  return adminApi<AdminList<AdminRecordView>>("/records", { query: { ...q }, signal });
}

/** A download link of every record the filters match. */
export function recordsExportUrl(q: RecordsQuery, format: "csv" | "jsonl"): string {
  return adminUrl("/records/export", { ...q, format });
}

// Keys: their rate limits, models, budgets.

export const KEYS_PATH = "/keys";

export function patchKey(id: string, patch: AdminKeyPatch): Promise<AdminApiKeyView> {
  return adminApi<AdminApiKeyView>(`/keys${one(id)}`, { method: "PATCH", body: patch });
}

// The audit log.

export interface AuditQuery {
  resource?: string;
  actor?: string;
  from?: number;
  to?: number;
}

export function auditLog(
  q: AuditQuery & { limit?: number; cursor?: string | null },
  signal?: AbortSignal,
): Promise<AdminList<AuditEntryView>> {
  return adminApi<AdminList<AuditEntryView>>("/audit-log", { query: { ...q }, signal });
}

// Admin tokens.

export const ADMIN_TOKENS_PATH = "/admin-tokens";

export function createAdminToken(name: string, scopes: AdminScope[]): Promise<AdminTokenCreated> {
  return adminApi<AdminTokenCreated>(ADMIN_TOKENS_PATH, { method: "POST", body: { name, scopes } });
}

export function revokeAdminToken(token: AdminTokenView): Promise<void> {
  return adminApi<void>(`${ADMIN_TOKENS_PATH}${one(token.id)}`, { method: "DELETE" });
}

export interface Paged<T> {
  /** null while the first page loads */
  rows: T[] | null;
  error: ApiError | Error | null;
  /** there are more: loadMore() fetches the next page */
  more: boolean;
  loadingMore: boolean;
  loadMore: () => void;
  reload: () => void;
}

/**
 * A list read page by page (the records, the audit log): the first page whenever `key` (the
 * filters) changes, the next ones on request, stale answers dropped. What was loaded for other
 * filters is never shown for these: the list is loading from the render that changes them.
 */
export function usePaged<T>(
  key: string,
  page: (cursor: string | null, signal: AbortSignal) => Promise<AdminList<T>>,
): Paged<T> {
  const [state, setState] = useState<{
    key: string | null;
    rows: T[] | null;
    next: string | null;
    error: ApiError | Error | null;
  }>({ key: null, rows: null, next: null, error: null });
  const [loadingMore, setLoadingMore] = useState(false);
  const request = useRef<AbortController | null>(null);
  const fetchPage = useRef(page);
  fetchPage.current = page;

  const load = useCallback(
    async (cursor: string | null) => {
      request.current?.abort();
      const controller = new AbortController();
      request.current = controller;
      if (cursor) setLoadingMore(true);
      else setState({ key, rows: null, next: null, error: null });
      try {
        const answer = await fetchPage.current(cursor, controller.signal);
        setState((s) => ({
          key,
          rows: cursor && s.key === key && s.rows ? [...s.rows, ...answer.data] : answer.data,
          next: answer.has_more ? answer.next_cursor : null,
          error: null,
        }));
      } catch (err) {
        if ((err as Error).name !== "AbortError") setState((s) => ({ ...s, key, error: err as Error }));
      } finally {
        if (request.current === controller) setLoadingMore(false);
      }
    },
    [key],
  );

  useEffect(() => {
    void load(null);
    return () => request.current?.abort();
  }, [load]);

  const current = state.key === key;
  return {
    rows: current ? state.rows : null,
    error: current ? state.error : null,
    more: current && state.next !== null,
    loadingMore,
    loadMore: () => void load(state.next),
    reload: () => void load(null),
  };
}
