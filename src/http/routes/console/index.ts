// The console API under /api/console/ (docs/console-api.md): session-cookie login, separate
// from the sk- keys of /v1. Two hooks guard every route, in this order:
//   1. the Host must be one the gateway answers to (DNS rebinding), and POST, PATCH and
//      DELETE must carry the gateway's own Origin (cross-site request forgery), both
//      checked before the body is read;
//   2. every route but login and logout needs a live session.
import { isIP } from "node:net";
import type { FastifyInstance, FastifyRequest } from "fastify";
import { readCookie, resolveSession, SESSION_COOKIE, sessionCookie } from "../../../auth/sessions.ts";
import { GatewayError } from "../../../errors/index.ts";
import type { GatewayDeps } from "../../deps.ts";
import { accountRoutes } from "./account.ts";
import { adminRoutes } from "./admin.ts";
import { overTls } from "./context.ts";
import { keyRoutes } from "./keys.ts";
import { recordRoutes } from "./records.ts";
import { sessionRoutes } from "./session.ts";
import { agentSessionRoutes } from "./sessions.ts";
import { ticketRoutes } from "./tickets.ts";

export const CONSOLE_PREFIX = "/api/console";
/** routes that need no session */
const PUBLIC = new Set([`${CONSOLE_PREFIX}/login`, `${CONSOLE_PREFIX}/logout`]);
export const STATE_CHANGING: ReadonlySet<string> = new Set(["POST", "PATCH", "DELETE", "PUT"]);

/**
 * The request's Origin is the gateway's own: the scheme of this socket and the Host the
 * client addressed. A missing or opaque ("null") Origin is not. One allowance: https in the
 * Origin over a plain socket, which is TLS ended by a reverse proxy in front of the gateway
 * (the browser saw https; the host still has to match, which is what keeps other sites out).
 */
export function sameOrigin(request: FastifyRequest): boolean {
  const origin = request.headers.origin;
  const host = request.headers.host;
  if (typeof origin !== "string" || !host) return false;
  try {
    const claimed = new URL(origin);
    const tls = overTls(request);
    if (claimed.origin === new URL(`${tls ? "https" : "http"}://${host}`).origin) return true;
    return !tls && claimed.protocol === "https:" && claimed.origin === new URL(`https://${host}`).origin;
  } catch {
    return false;
  }
}

/**
 * The Host names the console answers to. A page of another site whose name the attacker
 * points at the gateway (DNS rebinding) is same-origin with it in the browser, so its Origin
 * matches its Host: only the name tells it apart. IP addresses pass, since such a page's
 * name is never one, and so do loopback names (`localhost`, `*.localhost`: browsers resolve
 * them locally), the listen address, and `server.allowed_hosts`.
 */
export function hostChecker(
  listenHost: string,
  allowed: readonly string[],
): (host: string | undefined) => boolean {
  const names = new Set([listenHost.toLowerCase(), ...allowed]);
  return (host) => {
    if (!host) return false;
    let name: string;
    try {
      name = new URL(`http://${host}`).hostname;
    } catch {
      return false;
    }
    if (isIP(name.replace(/^\[|\]$/g, ""))) return true;
    return name === "localhost" || name.endsWith(".localhost") || names.has(name);
  };
}

export async function consoleRoutes(app: FastifyInstance, deps: GatewayDeps): Promise<void> {
  const hostAllowed = hostChecker(deps.config.server.host, deps.config.server.allowed_hosts);
  await app.register(
    async (api) => {
      api.decorateRequest("consoleUser", null);
      api.addHook("onRequest", async (request, reply) => {
        // answers carry one account's data: no shared cache may keep them
        reply.header("cache-control", "no-store");
        if (!hostAllowed(request.headers.host)) throw new GatewayError("host_not_allowed");
        if (STATE_CHANGING.has(request.method) && !sameOrigin(request))
          throw new GatewayError("origin_mismatch");
        if (PUBLIC.has(request.routeOptions.url ?? "")) return;
        const token = readCookie(request.headers.cookie, SESSION_COOKIE);
        const user = token ? await resolveSession(deps.store.db, token) : null;
        if (!user) {
          // a stale cookie is cleared, so the browser stops sending it
          if (token !== undefined) reply.header("set-cookie", sessionCookie(null, overTls(request)));
          throw new GatewayError("console_unauthenticated");
        }
        request.consoleUser = user;
      });
      await api.register(sessionRoutes, deps);
      await api.register(accountRoutes, deps);
      await api.register(keyRoutes, deps);
      await api.register(recordRoutes, deps);
      await api.register(agentSessionRoutes, deps);
      await api.register(ticketRoutes, deps);
      await api.register(adminRoutes, deps);
    },
    { prefix: CONSOLE_PREFIX },
  );
}
