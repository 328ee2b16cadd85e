// Caps on open connections, in all and per client address, so a few clients holding many
// idle or slow connections cannot take every socket the gateway has. A connection over a cap
// is closed as it arrives, before anything is read from it. Long streams count too: one
// address may keep at most max_connections_per_address open at once.
import type { Server } from "node:http";
import type { Socket } from "node:net";
import type { Config } from "../config/schema.ts";

export function limitConnections(
  server: Server,
  limits: Pick<Config["server"], "max_connections" | "max_connections_per_address">,
): void {
  // Node closes connections over this itself, before emitting "connection"
  server.maxConnections = limits.max_connections;
  const perAddress = new Map<string, number>();
  // first among the listeners, so nothing sets up a connection that is closed at once
  server.prependListener("connection", (socket: Socket) => {
    const address = socket.remoteAddress;
    if (address === undefined) return; // gone already
    const open = perAddress.get(address) ?? 0;
    if (open >= limits.max_connections_per_address) {
      socket.destroy();
      return;
    }
    perAddress.set(address, open + 1);
    socket.once("close", () => {
      const left = (perAddress.get(address) ?? 1) - 1;
      if (left > 0) perAddress.set(address, left);
      else perAddress.delete(address);
    });
  });
}
