/**
 * A protocol fake of the Nakadi subscription API: `GET /subscriptions` filtered by
 * `owning_application`, `event_type` (repeatable, all must match) and `consumer_group`, paged by
 * `offset`/`limit` with `_links.next.href`; `GET /subscriptions/<id>/stats?show_time_lag=true`
 * with each event type's partitions (`unconsumed_events`, `consumer_lag_seconds`). Problems
 * (429 with Retry-After, 5xx, garbage) are scripted per request in `failNext`.
 */
import { jsonAnswer, startRecordingServer } from "./recording_server.ts";
import type { FakeAnswer, RecordedRequest, RecordingServer } from "./recording_server.ts";

/** One partition's stats. */
export interface FakePartition {
  partition: string;
  unconsumed_events?: number;
  consumer_lag_seconds?: number;
}

/** A subscription the fake knows. */
export interface FakeSubscription {
  id: string;
  owning_application: string;
  event_types: string[];
  consumer_group: string;
  /** Stats per event type. */
  stats: Record<string, FakePartition[]>;
}

/** Options of {@linkcode startNakadiFake}. */
export interface NakadiFakeOptions {
  subscriptions: FakeSubscription[];
  /** Page size of `/subscriptions` (Nakadi's default is 20). */
  pageSize?: number;
  /** Required `Authorization` header value, if any. */
  authorization?: string;
}

/** A started fake. */
export interface NakadiFake {
  url: string;
  requests: RecordedRequest[];
  /**
   * Answers used before the normal ones, first to last, for requests whose path starts with the
   * given prefix.
   */
  failNext: { pathPrefix: string; answer: FakeAnswer }[];
  close(): Promise<void>;
  server: RecordingServer;
}

/** Start the fake on 127.0.0.1. */
export async function startNakadiFake(options: NakadiFakeOptions): Promise<NakadiFake> {
  const failNext: { pathPrefix: string; answer: FakeAnswer }[] = [];
  const pageSize = options.pageSize ?? 20;
  const problem = (status: number, title: string, detail: string): FakeAnswer => ({
    status,
    headers: { "content-type": "application/problem+json" },
    body: JSON.stringify({ type: "http://httpstatus.es/" + status, title, status, detail }),
  });
  const server = await startRecordingServer((req): FakeAnswer => {
    const i = failNext.findIndex((f) => req.path.startsWith(f.pathPrefix));
    if (i >= 0) return failNext.splice(i, 1)[0].answer;
    if (options.authorization && req.headers["authorization"] !== options.authorization) {
      return problem(401, "Unauthorized", "Full authentication is required");
    }
    if (req.method !== "GET") return problem(405, "Method Not Allowed", req.method);
    if (req.path === "/subscriptions") {
      const get = (k: string): string[] => req.query.filter(([n]) => n === k).map(([, v]) => v);
      const app = get("owning_application")[0];
      const group = get("consumer_group")[0];
      const types = get("event_type");
      const offset = Number(get("offset")[0] ?? "0");
      const limit = Number(get("limit")[0] ?? String(pageSize));
      const matching = options.subscriptions.filter((s) =>
        (app === undefined || s.owning_application === app) &&
        (group === undefined || s.consumer_group === group) &&
        types.every((t) => s.event_types.includes(t))
      );
      const page = matching.slice(offset, offset + limit);
      const links: Record<string, { href: string }> = {};
      const base = new URLSearchParams();
      if (app !== undefined) base.append("owning_application", app);
      for (const t of types) base.append("event_type", t);
      if (group !== undefined) base.append("consumer_group", group);
      if (offset + limit < matching.length) {
        const q = new URLSearchParams(base);
        q.append("offset", String(offset + limit));
        q.append("limit", String(limit));
        links.next = { href: `/subscriptions?${q}` };
      }
      if (offset > 0) {
        const q = new URLSearchParams(base);
        q.append("offset", String(Math.max(0, offset - limit)));
        q.append("limit", String(limit));
        links.prev = { href: `/subscriptions?${q}` };
      }
      return jsonAnswer({
        items: page.map((s) => ({
          id: s.id,
          owning_application: s.owning_application,
          event_types: s.event_types,
          consumer_group: s.consumer_group,
          read_from: "end",
          created_at: "2024-01-01T00:00:00Z",
        })),
        _links: links,
      });
    }
    const m = /^\/subscriptions\/([^/]+)\/stats$/.exec(req.path);
    if (m) {
      const s = options.subscriptions.find((x) => x.id === decodeURIComponent(m[1]));
      if (!s) return problem(404, "Not Found", `Subscription with id "${m[1]}" does not exist`);
      const lag = req.query.some(([k, v]) => k === "show_time_lag" && v === "true");
      return jsonAnswer({
        items: Object.entries(s.stats).map(([eventType, parts]) => ({
          event_type: eventType,
          partitions: parts.map((p) => ({
            partition: p.partition,
            state: "assigned",
            ...(p.unconsumed_events === undefined
              ? {}
              : { unconsumed_events: p.unconsumed_events }),
            ...(lag && p.consumer_lag_seconds !== undefined
              ? { consumer_lag_seconds: p.consumer_lag_seconds }
              : {}),
            stream_id: "s-1",
            assignment_type: "auto",
          })),
        })),
      });
    }
    return problem(404, "Not Found", `no route ${req.path}`);
  });
  return {
    url: server.url,
    requests: server.requests,
    failNext,
    server,
    close: () => server.close(),
  };
}
