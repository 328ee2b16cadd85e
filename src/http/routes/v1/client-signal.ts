// The signal of a request whose answer waits for work of the gateway's own (the count routes,
// which send nothing before their figure): it aborts when the client closes the connection
// first, so the work is dropped, and what it cut short is answered as the client's doing.
import type { FastifyReply, FastifyRequest } from "fastify";
import { GatewayError } from "../../../errors/index.ts";
import { ClientGone } from "../../../relay/call.ts";

export async function untilClientLeaves<T>(
  request: FastifyRequest,
  reply: FastifyReply,
  work: (signal: AbortSignal) => Promise<T>,
): Promise<T> {
  const client = new AbortController();
  const onClose = () => {
    if (!reply.raw.writableFinished) client.abort(new ClientGone("the client closed the connection"));
  };
  reply.raw.once("close", onClose);
  if (request.raw.socket.destroyed) onClose();
  try {
    return await work(client.signal);
  } catch (err) {
    // nobody to answer: not the gateway's failure either
    if (client.signal.aborted)
      throw new GatewayError("invalid_request", { message: "The client closed the connection." });
    throw err;
  } finally {
    reply.raw.off("close", onClose);
  }
}
