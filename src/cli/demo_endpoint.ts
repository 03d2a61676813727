/**
 * The demo's stand-in for real workloads: JSON endpoints for the shop's pods (one loopback
 * address each) and for a queue, with values that move over time so that the demo shows
 * something alive, and one path that fails (`/backlog` answers 500) so that it shows a failing
 * metric too. Only `serve --demo` starts it.
 */
import { createServer, type Server } from "node:http";

/** Where the demo endpoint listens. */
export interface DemoEndpointOptions {
  port: number;
  /** Loopback addresses to answer on (the demo pods' IPs and 127.0.0.1 for the queue). */
  hosts: string[];
  now(): number;
}

/** The running demo endpoint. */
export interface DemoEndpoint {
  /** Addresses that could be bound (host:port). */
  listening: string[];
  /** Addresses that could not be bound, with the reason. */
  failed: string[];
  close(): Promise<void>;
}

/** Requests per second of a demo pod: a slow wave, different per pod. */
export function demoPodRps(host: string, now: number): number {
  const phase = Number(host.split(".").pop() ?? 0);
  const minutes = now / 60_000;
  return Math.round((25 + 15 * Math.sin(minutes / 3 + phase)) * 10) / 10;
}

/** The demo queue's length: a saw tooth that fills over 10 minutes and drains. */
export function demoQueueLength(now: number): number {
  const minute = (now / 60_000) % 10;
  return Math.round(minute < 7 ? minute * 40 : (10 - minute) * 93);
}

function handler(host: string, now: () => number) {
  return (
    req: { url?: string },
    res: { writeHead(s: number, h: Record<string, string>): void; end(b: string): void },
  ): void => {
    const path = (req.url ?? "/").split("?")[0];
    let body: unknown;
    if (path === "/metrics") body = { http: { rps: demoPodRps(host, now()) } };
    else if (path === "/queue") {
      body = { queue: { name: "orders", length: demoQueueLength(now()) } };
    } else if (path === "/backlog") {
      // the demo's failing metric: a backend that is down
      res.writeHead(500, { "content-type": "application/json" });
      res.end(JSON.stringify({ error: "the payments backlog store is down (the demo's failure)" }));
      return;
    }
    if (body === undefined) {
      res.writeHead(404, { "content-type": "text/plain" });
      res.end("not found\n");
      return;
    }
    res.writeHead(200, { "content-type": "application/json" });
    res.end(JSON.stringify(body));
  };
}

/** Start the demo endpoint on every host that can be bound. */
export async function startDemoEndpoint(options: DemoEndpointOptions): Promise<DemoEndpoint> {
  const servers: Server[] = [];
  const listening: string[] = [];
  const failed: string[] = [];
  for (const host of options.hosts) {
    const server = createServer(handler(host, options.now));
    try {
      await new Promise<void>((resolve, reject) => {
        server.once("error", reject);
        server.listen(options.port, host, () => resolve());
      });
      servers.push(server);
      listening.push(`${host}:${options.port}`);
    } catch (e) {
      failed.push(`${host}:${options.port} (${(e as Error).message})`);
    }
  }
  return {
    listening,
    failed,
    close: () =>
      Promise.all(servers.map((s) => new Promise<void>((resolve) => s.close(() => resolve()))))
        .then(() => {}),
  };
}
