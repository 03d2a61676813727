/**
 * Test support for the formula and fallback suite (issue 21): a JSON endpoint on 127.0.0.1
 * whose answers the test switches between a value, an error status and "hold the request until
 * the test releases it" (so each collection's outcome is chosen by the test, one at a time), a
 * tiny Prometheus exporter for the real Prometheus to scrape, a free loopback port for the
 * adapter's own-metrics endpoint, and a reader of that endpoint's text exposition.
 *
 * @example
 * ```ts
 * const endpoint = await startSwitchableEndpoint({ status: 200, body: '{"value":1}' });
 * endpoint.hold(); // requests from now on wait
 * await endpoint.release(500, '{"error":"boom"}'); // answers the next one with a 500
 * await endpoint.waitHeld(); // the collection after it has started
 * await endpoint.close();
 * ```
 */
import { once } from "node:events";
import { createServer, type IncomingMessage, type Server, type ServerResponse } from "node:http";
import type { AddressInfo, Socket } from "node:net";
import { httpGet } from "./support.ts";

/** One answer of a {@linkcode SwitchableEndpoint}. */
export interface Answer {
  status: number;
  body: string;
}

/** What a {@linkcode SwitchableEndpoint} answered, in order. */
export interface AnsweredRequest extends Answer {
  path: string;
}

/** A loopback JSON endpoint whose answers the test switches. */
export interface SwitchableEndpoint {
  /** `http://127.0.0.1:PORT`, no trailing slash. */
  url: string;
  /** Every answer sent (complete or not), in order. */
  answered: AnsweredRequest[];
  /** Answer every request (and every request held now) with `answer` at once. */
  answerWith(answer: Answer): void;
  /** From now on, hold each request until {@linkcode release} answers it. */
  hold(): void;
  /** How many requests are held now. */
  heldCount(): number;
  /** Resolves once a request is held (at once if one is); rejects after `timeoutMs`. */
  waitHeld(timeoutMs?: number): Promise<void>;
  /**
   * Answer the oldest held request (waiting for one, up to `timeoutMs`) with `status` and
   * `body`; resolves once the answer is written.
   */
  release(status: number, body: string, timeoutMs?: number): Promise<void>;
  /** Close the server and every connection (held requests included). */
  close(): Promise<void>;
}

/** Start a {@linkcode SwitchableEndpoint} on 127.0.0.1 (any port) answering `initial`. */
export async function startSwitchableEndpoint(initial: Answer): Promise<SwitchableEndpoint> {
  let mode: Answer | "hold" = initial;
  const held: { res: ServerResponse; path: string }[] = [];
  const answered: AnsweredRequest[] = [];
  let onHeld: (() => void)[] = [];
  const sockets = new Set<Socket>();

  const send = (res: ServerResponse, path: string, a: Answer): Promise<void> => {
    answered.push({ path, status: a.status, body: a.body });
    return new Promise((resolve) => {
      res.writeHead(a.status, {
        "content-type": "application/json",
        "content-length": Buffer.byteLength(a.body),
      });
      res.end(a.body, () => resolve());
      res.once("close", () => resolve());
    });
  };

  const server: Server = createServer((req: IncomingMessage, res: ServerResponse) => {
    req.resume();
    const path = (req.url ?? "/").split("?")[0];
    if (mode !== "hold") {
      void send(res, path, mode);
      return;
    }
    const entry = { res, path };
    held.push(entry);
    res.once("close", () => {
      const i = held.indexOf(entry);
      if (i >= 0) held.splice(i, 1);
    });
    const waiting = onHeld;
    onHeld = [];
    for (const w of waiting) w();
  });
  server.on("connection", (s: Socket) => {
    sockets.add(s);
    s.on("close", () => sockets.delete(s));
  });
  server.listen(0, "127.0.0.1");
  await once(server, "listening");
  const { port } = server.address() as AddressInfo;

  const waitHeld = (timeoutMs = 30_000): Promise<void> => {
    if (held.length > 0) return Promise.resolve();
    return new Promise((resolve, reject) => {
      const done = (): void => {
        clearTimeout(timer);
        resolve();
      };
      const timer = setTimeout(() => {
        onHeld = onHeld.filter((w) => w !== done);
        reject(new Error(`no request reached the endpoint in ${timeoutMs} ms`));
      }, timeoutMs);
      onHeld.push(done);
    });
  };

  return {
    url: `http://127.0.0.1:${port}`,
    answered,
    answerWith(answer: Answer): void {
      mode = answer;
      for (const h of held.splice(0)) void send(h.res, h.path, answer);
    },
    hold(): void {
      mode = "hold";
    },
    heldCount: () => held.length,
    waitHeld,
    async release(status: number, body: string, timeoutMs?: number): Promise<void> {
      await waitHeld(timeoutMs);
      const h = held.shift()!;
      await send(h.res, h.path, { status, body });
    },
    close: () =>
      new Promise<void>((resolve) => {
        server.close(() => resolve());
        for (const s of sockets) s.destroy();
      }),
  };
}

/** A Prometheus exporter on 127.0.0.1 serving `exposition` (text format 0.0.4) at any path. */
export async function startExporter(
  exposition: string,
): Promise<{ target: string; close(): Promise<void> }> {
  const sockets = new Set<Socket>();
  const server = createServer((req, res) => {
    req.resume();
    res.writeHead(200, { "content-type": "text/plain; version=0.0.4" });
    res.end(exposition);
  });
  server.on("connection", (s: Socket) => {
    sockets.add(s);
    s.on("close", () => sockets.delete(s));
  });
  server.listen(0, "127.0.0.1");
  await once(server, "listening");
  const { port } = server.address() as AddressInfo;
  return {
    target: `127.0.0.1:${port}`,
    close: () =>
      new Promise<void>((resolve) => {
        server.close(() => resolve());
        for (const s of sockets) s.destroy();
      }),
  };
}

/** A port that was free a moment ago on 127.0.0.1 (the adapter does not log its metrics port). */
export async function freePort(): Promise<number> {
  const server = createServer();
  server.listen(0, "127.0.0.1");
  await once(server, "listening");
  const { port } = server.address() as AddressInfo;
  await new Promise<void>((r) => server.close(() => r()));
  return port;
}

/** One sample of a text exposition. */
export interface Sample {
  name: string;
  labels: Record<string, string>;
  value: number;
}

const SAMPLE_RE = /^([a-zA-Z_:][a-zA-Z0-9_:]*)(?:\{(.*)\})?\s+(\S+)(?:\s+\d+)?$/;
const LABEL_PAIR_RE = /([a-zA-Z_][a-zA-Z0-9_]*)="((?:[^"\\]|\\.)*)"/g;

/** The samples of a Prometheus text exposition (comments skipped). */
export function parseExposition(text: string): Sample[] {
  const out: Sample[] = [];
  for (const line of text.split("\n")) {
    if (line === "" || line.startsWith("#")) continue;
    const m = SAMPLE_RE.exec(line);
    if (!m) throw new Error(`not a sample line: ${line}`);
    const labels: Record<string, string> = {};
    for (const l of (m[2] ?? "").matchAll(LABEL_PAIR_RE)) {
      labels[l[1]] = l[2].replace(/\\n/g, "\n").replace(/\\"/g, '"').replace(/\\\\/g, "\\");
    }
    const v = m[3];
    out.push({
      name: m[1],
      labels,
      value: v === "+Inf" ? Infinity : v === "-Inf" ? -Infinity : Number(v),
    });
  }
  return out;
}

/** Read `http://127.0.0.1:PORT/metrics` and parse it. Throws on a status other than 200. */
export async function readOwnMetrics(port: number): Promise<Sample[]> {
  const r = await httpGet(`http://127.0.0.1:${port}/metrics`, { timeoutMs: 10_000 });
  if (r.status !== 200) throw new Error(`GET /metrics: status ${r.status}: ${r.body}`);
  return parseExposition(r.body);
}

/**
 * The value of the one sample named `name` whose labels are exactly `labels`, or undefined
 * when there is none.
 */
export function sampleValue(
  samples: readonly Sample[],
  name: string,
  labels: Record<string, string>,
): number | undefined {
  const want = JSON.stringify(Object.entries(labels).sort());
  const hits = samples.filter((s) =>
    s.name === name && JSON.stringify(Object.entries(s.labels).sort()) === want
  );
  if (hits.length > 1) throw new Error(`${hits.length} samples of ${name} with ${want}`);
  return hits[0]?.value;
}

/** Every sample named `name`, one per line, for messages. */
export function describeSamples(samples: readonly Sample[], name: string): string {
  const lines = samples.filter((s) => s.name === name).map((s) =>
    `${s.name}${JSON.stringify(s.labels)} ${s.value}`
  );
  return lines.length ? lines.join("\n") : `(no ${name} sample)`;
}
