// The handler of a route that runs a call through the relay, for any client API: the request
// counts against the rate limits, its body becomes the API's call, and the relay answers (a
// JSON body here, or a stream it writes itself). Registered with the route config
// `{ api, records: true }`, which makes the /v1 hooks open the call's record beforehand.
import type { FastifyReply, FastifyRequest } from "fastify";
import { embeddings } from "../../../apis/embeddings/api.ts";
import { checkMediaUrls } from "../../../apis/media-urls.ts";
import { sessionOf } from "../../../apis/session.ts";
import type { ClientApi, ClientEdge } from "../../../apis/types.ts";
import { type CallContext, ClientGone } from "../../../relay/call.ts";
import { admitRequest } from "../../../relay/hold.ts";
import type { GatewayDeps } from "../../deps.ts";
import { sseSink } from "../../sse.ts";

/** The route options that make a /v1 route a recorded call in `api`. */
export function callRoute(api: ClientEdge) {
  return { config: { api, records: true } };
}

export function relayRoute(deps: GatewayDeps, api: ClientApi) {
  return callHandler(deps, api, async (request, reply, auth) => {
    const call = await api.parse(request.body, request.headers, auth);
    checkMediaUrls(call, deps.config.media_urls);
    return (ctx) =>
      deps.relay.run(ctx, call, sseSink(reply, { stalledMs: deps.config.server.stream_stall_ms }));
  });
}

/** POST /v1/embeddings: the relay's embeddings call (src/relay/embed.ts), answered in JSON. */
export function embeddingsRoute(deps: GatewayDeps) {
  return callHandler(deps, {}, async (request) => {
    const call = embeddings.parse(request.body);
    return (ctx) => deps.relay.embed(ctx, call);
  });
}

/**
 * The steps every call's handler takes around the relay: the request taken from the rate
 * limits first, the body validated (`prepare`), then the call run with a signal that follows
 * the client's socket. `prepare` returns how to run the validated call.
 */
function callHandler(
  deps: GatewayDeps,
  /** the client API, whose body may name the call's session (Claude Code's metadata, Codex's cache key) */
  api: Pick<ClientApi, "sessionHints">,
  prepare: (
    request: FastifyRequest,
    reply: FastifyReply,
    auth: CallContext["auth"],
  ) => Promise<(ctx: CallContext) => Promise<string | undefined>>,
) {
  return async function relayCall(request: FastifyRequest, reply: FastifyReply) {
    request.call!.relayed = true;
    // before anything can refuse the call, so its record carries its session whatever happens
    request.call!.session = sessionOf(request.headers, api.sessionHints?.(request.body));
    const auth = request.auth!;
    const setHeaders = (headers: Record<string, string>) => reply.headers(headers);
    // The request counts against the rate limits before anything else is done with it.
    const rateTicket = await admitRequest(
      deps.rates,
      auth,
      deps.registry.plans.get(auth.account.plan_id),
      setHeaders,
    );
    const run = await prepare(request, reply, auth);
    const client = new AbortController();
    const onClose = () => {
      if (!reply.raw.writableFinished) client.abort(new ClientGone("the client closed the connection"));
    };
    reply.raw.once("close", onClose);
    try {
      const json = await run({
        auth,
        draft: request.call!,
        clientSignal: client.signal,
        setHeaders,
        rateTicket,
      });
      if (json !== undefined) return reply.type("application/json").send(json);
      // The relay answered (stream) or there is nobody left to answer.
      if (!reply.sent) reply.hijack();
      if (!reply.raw.writableEnded && client.signal.aborted) reply.raw.destroy();
      return reply;
    } finally {
      reply.raw.off("close", onClose);
    }
  };
}
