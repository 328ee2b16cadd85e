// The handler of a route that runs a call through the relay, for any client API: the request
// counts against the rate limits, its body becomes the API's ClientCall, and the relay
// answers (a JSON body here, or a stream it writes itself). Registered with the route config
// `{ api, records: true }`, which makes the /v1 hooks open the call's record beforehand.
import type { FastifyReply, FastifyRequest } from "fastify";
import { checkMediaUrls } from "../../../apis/media-urls.ts";
import { sessionOf } from "../../../apis/session.ts";
import type { ClientApi } from "../../../apis/types.ts";
import { ClientGone } from "../../../relay/call.ts";
import { admitRequest } from "../../../relay/hold.ts";
import type { GatewayDeps } from "../../deps.ts";
import { sseSink } from "../../sse.ts";

/** The route options that make a /v1 route a recorded call in `api`. */
export function callRoute(api: ClientApi) {
  return { config: { api, records: true } };
}

export function relayRoute(deps: GatewayDeps, api: ClientApi) {
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
    const call = await api.parse(request.body, request.headers, auth);
    checkMediaUrls(call, deps.config.media_urls);
    const client = new AbortController();
    const onClose = () => {
      if (!reply.raw.writableFinished) client.abort(new ClientGone("the client closed the connection"));
    };
    reply.raw.once("close", onClose);
    try {
      const json = await deps.relay.run(
        { auth, draft: request.call!, clientSignal: client.signal, setHeaders, rateTicket },
        call,
        sseSink(reply, { stalledMs: deps.config.server.stream_stall_ms }),
      );
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
