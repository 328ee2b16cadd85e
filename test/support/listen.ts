// Starts a test server listening and says where: the base URL the mock providers hand out.
import { once } from "node:events";
import type { Server } from "node:http";
import { type AddressInfo, createServer } from "node:net";

/** Listens on host:port (0: any free port); resolves with `http://host:port/v1`. */
export function listenForTests(server: Server, port: number, host: string): Promise<string> {
  return new Promise((resolve, reject) => {
    server.once("error", reject);
    server.listen(port, host, () => {
      server.off("error", reject);
      const addr = server.address() as AddressInfo;
      const hostForUrl = addr.family === "IPv6" ? `[${addr.address}]` : addr.address;
      resolve(`http://${hostForUrl}:${addr.port}/v1`);
    });
  });
}

/** A loopback port free right now (nothing listens on it): for a server a test starts itself, or an upstream whose connections are refused. */
export async function freePort(): Promise<number> {
  const server = createServer();
  server.listen(0, "127.0.0.1");
  await once(server, "listening");
  const { port } = server.address() as AddressInfo;
  server.close();
  await once(server, "close");
  return port;
}
