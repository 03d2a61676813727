/**
 * A protocol fake of InfluxDB 2.x's query API: `POST /api/v2/query?org=ORG` with
 * `Authorization: Token T` and a JSON body `{query, dialect, type}`, answered in the annotated
 * CSV dialect (`#datatype`, `#group`, `#default` rows, a header row, CRLF line ends, an empty
 * line after each block) or with InfluxDB's error JSON `{code, message}`.
 */
import { startRecordingServer } from "./recording_server.ts";
import type { FakeAnswer, RecordedRequest, RecordingServer } from "./recording_server.ts";

/** One column of a Flux table (besides the `result` and `table` columns every table has). */
export interface FluxColumn {
  label: string;
  /** `double`, `long`, `string`, `dateTime:RFC3339`, `boolean`, ... */
  datatype: string;
  /** Part of the group key. */
  group?: boolean;
}

/** Tables that share one schema: one annotation block. Each table is a list of rows. */
export interface FluxBlock {
  columns: FluxColumn[];
  tables: string[][][];
}

function csvCell(v: string): string {
  return /[",\r\n]/.test(v) ? `"${v.replace(/"/g, '""')}"` : v;
}

/**
 * Render blocks as InfluxDB answers them. Tables are numbered from 0 over all blocks.
 *
 * @example
 * ```ts
 * annotatedCsv([{ columns: [{ label: "_value", datatype: "double" }], tables: [[["1.5"]]] }]);
 * // "#datatype,string,long,double\r\n#group,false,false,false\r\n#default,_result,,\r\n" +
 * // ",result,table,_value\r\n,,0,1.5\r\n\r\n"
 * ```
 */
export function annotatedCsv(blocks: FluxBlock[]): string {
  let out = "";
  let table = 0;
  for (const b of blocks) {
    const line = (cells: string[]): string => cells.join(",") + "\r\n";
    out += line(["#datatype", "string", "long", ...b.columns.map((c) => c.datatype)]);
    out += line(["#group", "false", "false", ...b.columns.map((c) => String(c.group === true))]);
    out += line(["#default", "_result", "", ...b.columns.map(() => "")]);
    out += line(["", "result", "table", ...b.columns.map((c) => c.label)]);
    for (const rows of b.tables) {
      for (const r of rows) out += line(["", "", String(table), ...r.map(csvCell)]);
      table++;
    }
    out += "\r\n";
  }
  return out;
}

/** An error reported inside a 200 CSV answer (how Flux reports runtime errors). */
export function fluxErrorCsv(message: string): string {
  return "#datatype,string,string\r\n#group,true,true\r\n#default,,\r\n,error,reference\r\n" +
    `,${csvCell(message)},\r\n\r\n`;
}

/** A request to the query API, decoded. */
export interface FluxRequest {
  org: string | null;
  authorization: string | null;
  /** The JSON body as sent. */
  body: unknown;
  query: string;
}

/** What the fake answers a query with: CSV blocks, or any raw answer. */
export type FluxAnswer = { blocks: FluxBlock[] } | FakeAnswer;

/** Options of {@linkcode startInfluxFake}. */
export interface InfluxFakeOptions {
  org: string;
  token: string;
  /** Answers a query (authorized, right org). */
  answer(query: string, req: FluxRequest): FluxAnswer;
}

/** A started fake. */
export interface InfluxFake {
  url: string;
  /** Every request to the query API, decoded. */
  queries: FluxRequest[];
  server: RecordingServer;
  close(): Promise<void>;
}

function errorJson(status: number, code: string, message: string): FakeAnswer {
  return {
    status,
    headers: { "content-type": "application/json; charset=utf-8" },
    body: JSON.stringify({ code, message }),
  };
}

/** Start the fake on 127.0.0.1. */
export async function startInfluxFake(options: InfluxFakeOptions): Promise<InfluxFake> {
  const queries: FluxRequest[] = [];
  const handle = (req: RecordedRequest): FakeAnswer => {
    if (req.path !== "/api/v2/query") return errorJson(404, "not found", "path not found");
    if (req.method !== "POST") {
      return errorJson(405, "method not allowed", `method ${req.method} not allowed`);
    }
    const org = req.query.find(([k]) => k === "org")?.[1] ?? null;
    let body: unknown;
    try {
      body = JSON.parse(req.body);
    } catch {
      body = null;
    }
    const query = typeof (body as { query?: unknown })?.query === "string"
      ? (body as { query: string }).query
      : "";
    const decoded: FluxRequest = {
      org,
      authorization: req.headers["authorization"] ?? null,
      body,
      query,
    };
    queries.push(decoded);
    if (decoded.authorization !== `Token ${options.token}`) {
      return errorJson(401, "unauthorized", "unauthorized access");
    }
    if (body === null || query === "") {
      return errorJson(400, "invalid", "failed to decode request body: missing query");
    }
    if (org !== options.org) {
      return errorJson(404, "not found", `organization name "${org}" not found`);
    }
    const a = options.answer(query, decoded);
    if ("blocks" in a) {
      return {
        status: 200,
        headers: { "content-type": "text/csv; charset=utf-8" },
        body: annotatedCsv(a.blocks),
      };
    }
    return a;
  };
  const server = await startRecordingServer(handle);
  return { url: server.url, queries, server, close: () => server.close() };
}

/** InfluxDB's 400 answer to a query that does not compile. */
export function fluxCompileError(message: string): FakeAnswer {
  return errorJson(400, "invalid", `compilation failed: ${message}`);
}
