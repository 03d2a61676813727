/** Small loopback HTTP servers for collector tests; every test closes what it starts. */
import { createServer } from "node:http";
import type { IncomingMessage, Server, ServerResponse } from "node:http";

/** A started server. */
export interface TestServer {
  host: string;
  port: number;
  close(): Promise<void>;
}

/** Start a server on `host` (a 127.0.0.x address) and `port` (0: any). */
export function startServer(
  host: string,
  port: number,
  handler: (req: IncomingMessage, res: ServerResponse) => void,
): Promise<TestServer> {
  return new Promise((resolve, reject) => {
    const server: Server = createServer(handler);
    server.once("error", reject);
    server.listen(port, host, () => {
      const addr = server.address();
      const p = typeof addr === "object" && addr ? addr.port : port;
      resolve({
        host,
        port: p,
        close: () =>
          new Promise<void>((r) => {
            server.closeAllConnections?.();
            server.close(() => r());
          }),
      });
    });
  });
}

/** Start one server per host, all on the same port. */
export async function startServers(
  hosts: readonly string[],
  handler: (host: string, req: IncomingMessage, res: ServerResponse) => void,
): Promise<{ port: number; servers: TestServer[]; close(): Promise<void> }> {
  for (let attempt = 0; attempt < 5; attempt++) {
    const first = await startServer(hosts[0], 0, (req, res) => handler(hosts[0], req, res));
    const servers = [first];
    try {
      for (const h of hosts.slice(1)) {
        servers.push(await startServer(h, first.port, (req, res) => handler(h, req, res)));
      }
      return {
        port: first.port,
        servers,
        close: async () => {
          await Promise.all(servers.map((s) => s.close()));
        },
      };
    } catch {
      await Promise.all(servers.map((s) => s.close()));
    }
  }
  throw new Error("could not bind test servers on one port");
}

/** Answer JSON. */
export function json(res: ServerResponse, body: unknown, status = 200): void {
  res.writeHead(status, { "content-type": "application/json" });
  res.end(JSON.stringify(body));
}
