/**
 * A protocol fake of KairosDB's query API as ZMON exposes it: `POST /api/v1/datapoints/query`
 * with a JSON query, answered with `{queries: [{sample_size, results: [{name, group_by, tags,
 * values: [[ms, value], ...]}]}]}`, or with an error (`{errors: [...]}` and a status).
 */
import { jsonAnswer, startRecordingServer } from "./recording_server.ts";
import type { FakeAnswer, RecordedRequest, RecordingServer } from "./recording_server.ts";

/** One result series: its data points as [time ms, value]. */
export interface KairosSeries {
  tags?: Record<string, string[]>;
  values: [number, number][];
}

/** The KairosDB response body for one query's results. */
export function kairosResponse(name: string, series: KairosSeries[]): unknown {
  return {
    queries: [{
      sample_size: series.reduce((n, s) => n + s.values.length, 0),
      results: series.map((s) => ({
        name,
        group_by: [{ name: "type", type: "number" }],
        tags: s.tags ?? {},
        values: s.values,
      })),
    }],
  };
}

/** What the fake answers: series for the queried metric, or any raw answer. */
export type KairosAnswer = { series: KairosSeries[] } | FakeAnswer;

/** A started fake. */
export interface KairosFake {
  url: string;
  /** The parsed JSON bodies of the queries received. */
  queries: unknown[];
  server: RecordingServer;
  close(): Promise<void>;
}

/** Start the fake; `answer` sees the parsed query and the raw request. */
export async function startKairosFake(
  answer: (query: unknown, req: RecordedRequest) => KairosAnswer,
): Promise<KairosFake> {
  const queries: unknown[] = [];
  const server = await startRecordingServer((req): FakeAnswer => {
    if (req.path !== "/api/v1/datapoints/query" || req.method !== "POST") {
      return jsonAnswer({ errors: [`no route ${req.method} ${req.path}`] }, 404);
    }
    let q: unknown;
    try {
      q = JSON.parse(req.body);
    } catch {
      return jsonAnswer({ errors: ["query body is not JSON"] }, 400);
    }
    queries.push(q);
    const a = answer(q, req);
    if ("series" in a) {
      const name = (q as { metrics?: { name?: string }[] }).metrics?.[0]?.name ?? "";
      return jsonAnswer(kairosResponse(name, a.series));
    }
    return a;
  });
  return { url: server.url, queries, server, close: () => server.close() };
}
