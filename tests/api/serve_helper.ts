/**
 * Test helper: serve a Hono app over plain HTTP on 127.0.0.1 with a random port, with
 * @hono/node-server (which works under Node, Deno and Bun). For tests only; the shipped
 * server (TLS, auth) lives in src/runtime/.
 */
import { serve } from "@hono/node-server";
import type { AddressInfo } from "node:net";
import type { Hono } from "hono";

/** A running test server. */
export interface TestServer {
  /** `http://127.0.0.1:PORT`, no trailing slash. */
  url: string;
  port: number;
  /** Stops accepting connections and closes open ones. */
  close(): Promise<void>;
}

/** Start `app` on 127.0.0.1 (random free port); resolves once it listens. */
export function serveForTest(app: Hono): Promise<TestServer> {
  return new Promise((resolve, reject) => {
    const server = serve(
      { fetch: app.fetch, hostname: "127.0.0.1", port: 0 },
      (info: AddressInfo) => {
        const port = info.port;
        resolve({
          url: `http://127.0.0.1:${port}`,
          port,
          close: () =>
            new Promise<void>((res, rej) => {
              const s = server as unknown as {
                close(cb: (err?: Error) => void): void;
                closeAllConnections?: () => void;
              };
              s.close((err) => (err ? rej(err) : res()));
              s.closeAllConnections?.();
            }),
        });
      },
    );
    server.on("error", reject);
  });
}
