/**
 * The `fetch` the collectors get: the runtime's own on Bun and Deno; on Node a small fetch on
 * undici's `request` API.
 *
 * Why not Node's fetch: every response it returns is registered in a FinalizationRegistry (so
 * that an unread body is cancelled when the response is collected), and V8's young-generation
 * collector keeps registered objects alive, so each response with its headers, streams and
 * promises is promoted to the old generation. Measured on Node 20.20 (20,000 GETs of a small
 * JSON body on loopback, 50 at a time): fetch promoted 224-242 MB and took 278-361 us a
 * request; `request` promoted 21 MB and took 128 us. With 10,000 HPAs that promotion made
 * scavenges of 7-13 ms every half second. Deno's fetch promoted 32 MB in the same test and
 * undici on Deno more (49 MB); Bun's fetch is native.
 *
 * Of a response it has what fetchCapped (http_get.ts), the one reader of the collectors'
 * fetch, uses: status, statusText, type, headers.get, text, and body as a web stream with
 * cancel. What differs from fetch:
 * - redirects are never followed (every collector asks for `redirect: "manual"`; a call that
 *   asks to follow goes to the runtime's fetch);
 * - `statusText` is the standard reason phrase of the status (as on Deno);
 * - no `accept-encoding` is sent; a gzip, deflate or br body a server sends anyway is decoded.
 */
import { STATUS_CODES } from "node:http";
import type { Readable } from "node:stream";
import * as zlib from "node:zlib";
import { Agent, request } from "undici";
import { runtimeName } from "./serve.ts";

/** A fetch and the connections behind it. */
export interface CollectorFetch {
  fetch: typeof fetch;
  /** Closes idle connections and releases the pool (a no-op for the runtime's fetch). */
  close(): Promise<void>;
}

/**
 * The fetch for the collectors on this runtime.
 *
 * @example
 * ```ts
 * const http = collectorFetch();
 * const engine = new Engine({ ...options, fetch: http.fetch });
 * await http.close();
 * ```
 */
export function collectorFetch(): CollectorFetch {
  if (runtimeName() !== "node") {
    return {
      fetch: (input, init) => globalThis.fetch(input, init),
      close: () => Promise.resolve(),
    };
  }
  return createRequestFetch();
}

/** Options of {@linkcode createRequestFetch}. */
export interface RequestFetchOptions {
  /** Idle keep-alive connections are closed after this long, ms (default 4,000, as fetch). */
  keepAliveTimeoutMs?: number;
}

/** The Node fetch of {@linkcode collectorFetch}, on any runtime (for tests). */
export function createRequestFetch(options: RequestFetchOptions = {}): CollectorFetch {
  const agent = new Agent({ keepAliveTimeout: options.keepAliveTimeoutMs ?? 4_000 });
  const requestFetch = async (
    input: string | URL | Request,
    init?: RequestInit,
  ): Promise<Response> => {
    if (input instanceof Request || (init?.redirect ?? "follow") !== "manual") {
      return await globalThis.fetch(input, init);
    }
    const url = typeof input === "string" ? input : input.href;
    const method = (init?.method ?? "GET").toUpperCase();
    const res = await request(url, {
      method: method as "GET",
      headers: headerRecord(init?.headers),
      body: bodyOf(init?.body),
      signal: init?.signal ?? undefined,
      dispatcher: agent,
      // the caller's deadline bounds the request (fetch has no separate timeouts either)
      headersTimeout: 0,
      bodyTimeout: 0,
    });
    return new RequestResponse(url, res.statusCode, res.headers, res.body) as unknown as Response;
  };
  return {
    fetch: requestFetch as typeof fetch,
    close: () => agent.close(),
  };
}

/** The request headers as a record, with fetch's `accept: *\/*` when none is given. */
function headerRecord(headers: HeadersInit | undefined): Record<string, string> {
  const out: Record<string, string> = {};
  if (headers !== undefined) {
    if (headers instanceof Headers || Array.isArray(headers)) {
      new Headers(headers).forEach((value, name) => (out[name] = value));
    } else {
      for (const [name, value] of Object.entries(headers)) out[name.toLowerCase()] = value;
    }
  }
  out.accept ??= "*/*";
  return out;
}

function bodyOf(body: BodyInit | null | undefined): string | Uint8Array | undefined {
  if (body === undefined || body === null) return undefined;
  if (typeof body === "string" || body instanceof Uint8Array) return body;
  throw new TypeError(`unsupported request body ${Object.prototype.toString.call(body)}`);
}

type HeaderValues = Record<string, string | string[] | undefined>;

/** The response headers, read-only: what fetchCapped reads of web Headers. */
class RecordHeaders {
  readonly #headers: HeaderValues;
  constructor(headers: HeaderValues) {
    this.#headers = headers;
  }
  get(name: string): string | null {
    const v = this.#headers[name.toLowerCase()];
    if (v === undefined) return null;
    return Array.isArray(v) ? v.join(", ") : v;
  }
}

/** The part of a fetch Response the collectors read, over undici's response body. */
class RequestResponse {
  readonly url: string;
  readonly status: number;
  readonly statusText: string;
  readonly headers: RecordHeaders;
  readonly type = "basic";
  readonly #raw: Readable;
  #decoded: Readable | null = null;
  #web: ReadableStream<Uint8Array> | null = null;
  #used = false;

  constructor(url: string, status: number, headers: HeaderValues, body: Readable) {
    this.url = url;
    this.status = status;
    this.statusText = STATUS_CODES[status] ?? "";
    this.headers = new RecordHeaders(headers);
    this.#raw = body; // (undici listens for errors of a body nobody reads)
  }

  /** The body as sent, decoded when the server compressed it. */
  #stream(): Readable {
    if (this.#decoded !== null) return this.#decoded;
    const encoding = (this.headers.get("content-encoding") ?? "").trim().toLowerCase();
    const decoder = encoding === "gzip" || encoding === "x-gzip"
      ? zlib.createGunzip()
      : encoding === "deflate"
      ? zlib.createInflate()
      : encoding === "br"
      ? zlib.createBrotliDecompress()
      : null;
    if (decoder === null) return this.#decoded = this.#raw;
    this.#raw.on("error", (e) => decoder.destroy(e));
    decoder.on("close", () => this.#raw.destroy());
    return this.#decoded = this.#raw.pipe(decoder);
  }

  #take(): Readable {
    if (this.#used) throw new TypeError("Body is unusable: Body has already been read");
    this.#used = true;
    return this.#stream();
  }

  get body(): ReadableStream<Uint8Array> | null {
    if (this.#web === null) {
      // pulled chunk by chunk from the body (only a body of unknown length or a compressed
      // one is read this way)
      let chunks: AsyncIterator<Buffer> | null = null;
      const next = (): AsyncIterator<Buffer> => chunks ??= this.#take()[Symbol.asyncIterator]();
      this.#web = new ReadableStream<Uint8Array>({
        async pull(controller): Promise<void> {
          const { done, value } = await next().next();
          if (done) controller.close();
          else controller.enqueue(new Uint8Array(value.buffer, value.byteOffset, value.byteLength));
        },
        async cancel(): Promise<void> {
          await next().return?.();
        },
      }, { highWaterMark: 0 });
    }
    return this.#web;
  }

  async text(): Promise<string> {
    const stream = this.#take();
    if (stream === this.#raw) {
      return await (this.#raw as unknown as { text(): Promise<string> }).text();
    }
    return new TextDecoder().decode(await this.#bytesOf(stream));
  }

  async #bytesOf(stream: Readable): Promise<Uint8Array> {
    const chunks: Buffer[] = [];
    for await (const chunk of stream) chunks.push(chunk as Buffer);
    return Buffer.concat(chunks);
  }
}
