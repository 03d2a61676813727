/**
 * A loopback HTTP server that records every request (method, path, query, headers, body) and
 * answers through a handler; the base of the protocol fakes. Tests must `close()` it.
 */
import { createServer } from "node:http";
import type { IncomingMessage, ServerResponse } from "node:http";

/** A request as the fake received it. */
export interface RecordedRequest {
  method: string;
  /** Path without the query. */
  path: string;
  /** Query parameters in order (repeated keys kept). */
  query: [string, string][];
  headers: Record<string, string>;
  body: string;
}

/** What a handler answers. */
export interface FakeAnswer {
  status?: number;
  headers?: Record<string, string>;
  body?: string;
  /** Wait this long before answering (a slow server). */
  delayMs?: number;
  /** Never answer (the test's timeout must end the request). */
  hang?: boolean;
}

/** A started fake. */
export interface RecordingServer {
  /** `http://127.0.0.1:PORT`. */
  url: string;
  requests: RecordedRequest[];
  close(): Promise<void>;
}

/** Start a recording server on 127.0.0.1 (any free port). */
export function startRecordingServer(
  handler: (req: RecordedRequest) => FakeAnswer | Promise<FakeAnswer>,
): Promise<RecordingServer> {
  const requests: RecordedRequest[] = [];
  const timers = new Set<ReturnType<typeof setTimeout>>();
  const hanging = new Set<ServerResponse>();
  const server = createServer((req: IncomingMessage, res: ServerResponse) => {
    const chunks: Buffer[] = [];
    req.on("data", (c: Buffer) => chunks.push(c));
    req.on("end", async () => {
      const u = new URL(req.url ?? "/", "http://fake");
      const headers: Record<string, string> = {};
      for (const [k, v] of Object.entries(req.headers)) {
        if (typeof v === "string") headers[k] = v;
        else if (Array.isArray(v)) headers[k] = v.join(", ");
      }
      const rec: RecordedRequest = {
        method: req.method ?? "",
        path: u.pathname,
        query: [...u.searchParams.entries()],
        headers,
        body: Buffer.concat(chunks).toString("utf8"),
      };
      requests.push(rec);
      let answer: FakeAnswer;
      try {
        answer = await handler(rec);
      } catch (e) {
        answer = { status: 500, body: `fake handler failed: ${(e as Error).message}` };
      }
      if (answer.hang) {
        hanging.add(res);
        return;
      }
      const send = (): void => {
        const body = answer.body ?? "";
        res.writeHead(answer.status ?? 200, {
          "content-length": String(Buffer.byteLength(body)),
          ...answer.headers,
        });
        res.end(body);
      };
      if (answer.delayMs) {
        const t = setTimeout(() => {
          timers.delete(t);
          send();
        }, answer.delayMs);
        timers.add(t);
      } else send();
    });
  });
  return new Promise((resolve, reject) => {
    server.once("error", reject);
    server.listen(0, "127.0.0.1", () => {
      const addr = server.address();
      const port = typeof addr === "object" && addr ? addr.port : 0;
      resolve({
        url: `http://127.0.0.1:${port}`,
        requests,
        close: () =>
          new Promise<void>((r) => {
            for (const t of timers) clearTimeout(t);
            for (const res of hanging) res.destroy();
            server.closeAllConnections?.();
            server.close(() => r());
          }),
      });
    });
  });
}

/** A JSON answer. */
export function jsonAnswer(
  body: unknown,
  status = 200,
  headers?: Record<string, string>,
): FakeAnswer {
  return {
    status,
    headers: { "content-type": "application/json", ...headers },
    body: JSON.stringify(body),
  };
}
