// fetch() for /api/console (and, through admin-api.ts, for the admin API /admin/v1): JSON in
// and out, the gateway's error envelope turned into an ApiError, and one place that reacts to
// an expired session. The browser sends the session cookie (same origin) and, for
// POST/PATCH/DELETE, the Origin header the server checks.
import { useCallback, useEffect, useRef, useState } from "react";

export const API = "/api/console";

export class ApiError extends Error {
  override name = "ApiError";
  readonly status: number;
  readonly code: string;
  readonly param: string | null;

  constructor(status: number, code: string, message: string, param: string | null = null) {
    super(message);
    this.status = status;
    this.code = code;
    this.param = param;
  }
}

let onUnauthenticated: (() => void) | null = null;
/** Called when any call but the login answers 401: the session ended, show the login page. */
export function setUnauthenticatedHandler(handler: (() => void) | null): void {
  onUnauthenticated = handler;
}

let actingAccount: string | null = null;
/** An admin looking at another account: account views get `?account=<id>` (the contract's scope). */
export function setActingAccount(id: string | null): void {
  actingAccount = id;
}

/**
 * The account views, which an admin may point at another account (the contract's
 * `?account=`). A ticket, once known by id, is not scoped: the server finds it by id.
 */
function accountScoped(path: string): boolean {
  return /^\/(overview|models|plans|keys|records)(\/|$)/.test(path) || path === "/tickets";
}

/** path relative to /api/console, with the acting account added where it applies */
export function apiUrl(path: string, query: Query = {}): string {
  const scoped = actingAccount && accountScoped(path) && !query.account;
  return withQuery(`${API}${path}`, scoped ? { ...query, account: actingAccount } : query);
}

type Query = Record<string, string | number | undefined | null>;

/** `url` with the query's non-empty values; none of the console API's account scope */
export function withQuery(url: string, query: Query = {}): string {
  const params = new URLSearchParams();
  for (const [name, value] of Object.entries(query))
    if (value !== undefined && value !== null && value !== "") params.set(name, String(value));
  const qs = params.toString();
  return `${url}${qs ? `?${qs}` : ""}`;
}

export interface CallOptions {
  method?: "GET" | "POST" | "PATCH" | "DELETE";
  body?: unknown;
  query?: Query;
  signal?: AbortSignal;
}

export async function api<T>(path: string, options: CallOptions = {}): Promise<T> {
  return request<T>(apiUrl(path, options.query), options, path === "/login");
}

/**
 * One call to a URL of the gateway (the query already in it). A 401 ends the session in the
 * app, but not for the login itself, whose 401 is a wrong password.
 */
export async function request<T>(
  url: string,
  options: Omit<CallOptions, "query"> = {},
  isLogin = false,
): Promise<T> {
  const method = options.method ?? "GET";
  const headers: Record<string, string> = { accept: "application/json" };
  let body: string | undefined;
  if (options.body !== undefined) {
    headers["content-type"] = "application/json";
    body = JSON.stringify(options.body);
  }
  let res: Response;
  try {
    res = await fetch(url, {
      method,
      headers,
      body,
      credentials: "same-origin",
      signal: options.signal,
    });
  } catch (err) {
    if ((err as Error).name === "AbortError") throw err;
    throw new ApiError(
      0,
      "network_error",
      "The gateway could not be reached. Check your connection and retry.",
    );
  }
  if (res.status === 204) return undefined as T;
  const text = await res.text();
  let json: any = null;
  try {
    json = text ? JSON.parse(text) : null;
  } catch {
    // not JSON: a proxy's page or a crash; described below
  }
  if (!res.ok) {
    const envelope = json?.error;
    const error = new ApiError(
      res.status,
      typeof envelope?.code === "string" ? envelope.code : `http_${res.status}`,
      typeof envelope?.message === "string" ? envelope.message : `The gateway answered HTTP ${res.status}.`,
      typeof envelope?.param === "string" ? envelope.param : null,
    );
    if (res.status === 401 && !isLogin) onUnauthenticated?.();
    throw error;
  }
  return json as T;
}

export function errorMessage(err: unknown): string {
  if (err instanceof ApiError) return err.message;
  if (err instanceof Error) return err.message;
  return String(err);
}

export interface Loaded<T> {
  data: T | undefined;
  error: ApiError | Error | undefined;
  loading: boolean;
  reload: () => void;
}

/** GETs `path` of the console API (again whenever `key` changes or reload() is called). */
export function useApi<T>(path: string | null, query: CallOptions["query"] = {}): Loaded<T> {
  return useGet<T>(path === null ? null : apiUrl(path, query));
}

/** GETs `url` (again whenever it changes or reload() is called), cancelling stale calls. */
export function useGet<T>(url: string | null): Loaded<T> {
  return useLoad<T>(url, (signal) => request<T>(url!, { signal }));
}

/**
 * What `load` fetches, again whenever `key` changes (null: nothing yet) or reload() is called,
 * cancelling stale loads. The data shown stays until the new data is there.
 */
export function useLoad<T>(key: string | null, load: (signal: AbortSignal) => Promise<T>): Loaded<T> {
  const [state, setState] = useState<{ data?: T; error?: ApiError | Error; loading: boolean }>({
    loading: key !== null,
  });
  const [tick, setTick] = useState(0);
  const loader = useRef(load);
  loader.current = load;

  // biome-ignore lint/correctness/useExhaustiveDependencies: `key` stands for what `load` fetches; `tick` asks again
  useEffect(() => {
    if (key === null) return;
    const controller = new AbortController();
    setState((s) => ({ data: s.data, loading: true }));
    loader.current(controller.signal).then(
      (data) => setState({ data, loading: false }),
      (error: Error) => {
        if (error.name !== "AbortError") setState({ error, loading: false });
      },
    );
    return () => controller.abort();
  }, [key, tick]);

  const reload = useCallback(() => setTick((t) => t + 1), []);
  return { data: state.data, error: state.error, loading: state.loading, reload };
}
