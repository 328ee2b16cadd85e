// A small client-side router over the history API: the app lives under /console, routes are
// paths below it, and links are real <a href> elements (open in a new tab, copy the link).
import { type AnchorHTMLAttributes, type MouseEvent, useSyncExternalStore } from "react";

export const BASE = "/console";
const CHANGE = "console:navigate";

export interface Location {
  /** the path below /console, always starting with "/" ("/" for the overview) */
  path: string;
  query: URLSearchParams;
  /** what navigate() passed along (e.g. a record to prefill a ticket from) */
  state: unknown;
}

let cached: { href: string; state: unknown; location: Location } | null = null;

function read(): Location {
  const href = window.location.href;
  const state = window.history.state;
  if (cached && cached.href === href && cached.state === state) return cached.location;
  let path = window.location.pathname;
  if (path === BASE || path.startsWith(`${BASE}/`)) path = path.slice(BASE.length);
  if (!path.startsWith("/")) path = `/${path}`;
  if (path.length > 1 && path.endsWith("/")) path = path.slice(0, -1);
  const location = { path, query: new URLSearchParams(window.location.search), state };
  cached = { href, state, location };
  return location;
}

function subscribe(listener: () => void): () => void {
  window.addEventListener("popstate", listener);
  window.addEventListener(CHANGE, listener);
  return () => {
    window.removeEventListener("popstate", listener);
    window.removeEventListener(CHANGE, listener);
  };
}

export function useLocation(): Location {
  return useSyncExternalStore(subscribe, read);
}

/** `to` is a path below /console, with an optional query string. */
export function href(to: string): string {
  return `${BASE}${to === "/" ? "/" : to}`;
}

export function navigate(to: string, options: { replace?: boolean; state?: unknown } = {}): void {
  const url = href(to);
  if (options.replace) window.history.replaceState(options.state ?? null, "", url);
  else window.history.pushState(options.state ?? null, "", url);
  window.dispatchEvent(new Event(CHANGE));
}

/** Matches "/tickets/:id" against a path; returns the parameters or null. */
export function match(pattern: string, path: string): Record<string, string> | null {
  const want = pattern.split("/");
  const got = path.split("/");
  if (want.length !== got.length) return null;
  const params: Record<string, string> = {};
  for (let i = 0; i < want.length; i++) {
    const w = want[i]!;
    const g = got[i]!;
    if (w.startsWith(":")) {
      if (!g) return null;
      params[w.slice(1)] = decodeURIComponent(g);
    } else if (w !== g) return null;
  }
  return params;
}

type LinkProps = Omit<AnchorHTMLAttributes<HTMLAnchorElement>, "href"> & { to: string; state?: unknown };

export function Link({ to, state, onClick, ...rest }: LinkProps) {
  function follow(event: MouseEvent<HTMLAnchorElement>) {
    onClick?.(event);
    if (event.defaultPrevented || event.button !== 0) return;
    if (event.metaKey || event.ctrlKey || event.shiftKey || event.altKey) return; // new tab or window
    event.preventDefault();
    navigate(to, { state });
  }
  return <a href={href(to)} onClick={follow} {...rest} />;
}
