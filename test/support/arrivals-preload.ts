// Loaded (node --import) into gateway processes the cluster tests start: tells the parent,
// over the IPC channel, which of the load's requests (x-load-index) reached this gateway, as
// Arrivals.watch() does for a gateway in the test's own process. The gateway's code is not
// touched: the HTTP server publishes every request on this diagnostics channel.
import { subscribe } from "node:diagnostics_channel";
import type { IncomingMessage } from "node:http";

subscribe("http.server.request.start", (message) => {
  const index = (message as { request: IncomingMessage }).request.headers["x-load-index"];
  if (index !== undefined && process.send) process.send({ arrived: Number(index) });
});
