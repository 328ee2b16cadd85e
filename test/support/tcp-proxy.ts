// A TCP proxy on loopback in front of a real server (PostgreSQL), which the test cuts and
// restores: cut, it closes every connection and refuses new ones, as a server that went down
// does; restored, it listens on the same port again. What a gateway meets is a real outage of
// its store, without stopping the machine's shared server.
import { once } from "node:events";
import { type AddressInfo, connect, createServer, type Server, type Socket } from "node:net";

export interface TcpProxy {
  port: number;
  /** closes every connection through it and refuses new ones */
  cut(): Promise<void>;
  /** accepts connections again, on the same port */
  restore(): Promise<void>;
  close(): Promise<void>;
}

export async function startTcpProxy(target: { host: string; port: number }): Promise<TcpProxy> {
  const sockets = new Set<Socket>();
  const track = (socket: Socket) => {
    sockets.add(socket);
    socket.once("close", () => sockets.delete(socket));
    socket.on("error", () => socket.destroy());
  };
  const open = (): Server =>
    createServer((client) => {
      const upstream = connect(target.port, target.host);
      track(client);
      track(upstream);
      client.pipe(upstream).pipe(client);
      client.once("close", () => upstream.destroy());
      upstream.once("close", () => client.destroy());
    });
  let server: Server | undefined = open();
  server.listen(0, "127.0.0.1");
  await once(server, "listening");
  const { port } = server.address() as AddressInfo;
  const cut = async () => {
    const s = server;
    server = undefined;
    if (!s) return;
    const closed = once(s, "close");
    s.close();
    for (const socket of sockets) socket.destroy();
    await closed;
  };
  return {
    port,
    cut,
    async restore() {
      if (server) return;
      server = open();
      server.listen(port, "127.0.0.1");
      await once(server, "listening");
    },
    close: cut,
  };
}
