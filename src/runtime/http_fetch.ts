/**
 * The `fetch` the collectors get: on Node a small fetch on undici's `request` API; on Bun and
 * Deno the runtime's own, told not to decompress.
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
 * Why we inflate ourselves: an HPA author chooses the URL, so a backend may answer a gzip
 * bomb (255 KiB that inflate to 256 MiB). Bun's fetch inflates ahead of the reader, in 256 KiB
 * chunks and far past them: reading 1 MiB of such a body and cancelling took its RSS from 23 to
 * 181 MiB (gzip) and 249 MiB (br), with or without `accept-encoding: identity` (Bun 1.4).
 * `decompress: false` hands the bytes as sent (and sends no `accept-encoding`). Deno's fetch
 * inflates as it is read (4 KiB chunks, bounded), but a user-set `accept-encoding` turns its
 * decoding off (a gzip answer then arrives as sent, Deno 2.9): we send `identity`, so that
 * servers do not compress (and an answer with a length stays on fetchCapped's one-call path)
 * and one decoder serves all runtimes. node:zlib streams inflate only as far as they are read
 * (measured on all three runtimes: 1 MiB read of a bomb, about 1 MiB inflated), so no more
 * than the reader's cap and a chunk or two is ever inflated.
 *
 * Of a response it has what fetchCapped (http_get.ts), the one reader of the collectors'
 * fetch, uses: status, statusText, type, headers.get, text, and body as a web stream with
 * cancel. What differs from fetch:
 * - redirects are never followed (every collector asks for `redirect: "manual"`; a call that
 *   asks to follow goes to the runtime's fetch);
 * - `statusText` is the standard reason phrase of the status (as on Deno);
 * - no compression is asked for (no `accept-encoding`, `identity` on Deno); a gzip, deflate or
 *   br body a server sends anyway is inflated as it is read;
 * - a body that fails to arrive fails with short words the same on every runtime (`connection
 *   closed while reading the body`, `invalid gzip body: <why>`), not the runtime's hints.
 */
import { STATUS_CODES } from "node:http";
import { Readable } from "node:stream";
import * as zlib from "node:zlib";
import { Agent, request } from "undici";
import { runtimeName } from "./serve.ts";

/** A fetch and the connections behind it. */
export interface CollectorFetch {
  fetch: typeof fetch;
  /** Closes idle connections and releases the pool (a no-op for the runtime's fetch). */
  close(): Promise<void>;
}

/** Options of {@linkcode collectorFetch}. */
export interface CollectorFetchOptions {
  /**
   * Called once a compressed body is done (read to its end, cancelled or failed) with the
   * bytes it was inflated to: what was read and what the decoder still held (for tests).
   */
  onInflated?: (bytes: number) => void;
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
export function collectorFetch(options: CollectorFetchOptions = {}): CollectorFetch {
  const runtime = runtimeName();
  if (runtime === "node") return createRequestFetch(options);
  return { fetch: createRuntimeFetch(runtime, options), close: () => Promise.resolve() };
}

/** The collectors' fetch on Bun and Deno: the runtime's, without its decompression. */
function createRuntimeFetch(runtime: "deno" | "bun", options: CollectorFetchOptions): typeof fetch {
  const runtimeFetch = async (
    input: string | URL | Request,
    init?: RequestInit,
  ): Promise<Response> => {
    if (input instanceof Request || (init?.redirect ?? "follow") !== "manual") {
      return await globalThis.fetch(input, init);
    }
    const res = await globalThis.fetch(
      input,
      runtime === "bun"
        ? { ...init, decompress: false } as RequestInit
        : { ...init, headers: identityAccepted(init?.headers) },
    );
    return new WebResponse(res, options.onInflated) as unknown as Response;
  };
  return runtimeFetch as typeof fetch;
}

/** `headers` with `accept-encoding: identity` unless they name an encoding. */
function identityAccepted(headers: HeadersInit | undefined): Headers {
  const out = new Headers(headers);
  if (!out.has("accept-encoding")) out.set("accept-encoding", "identity");
  return out;
}

/** Options of {@linkcode createRequestFetch}. */
export interface RequestFetchOptions extends CollectorFetchOptions {
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
    return new RequestResponse(
      url,
      res.statusCode,
      res.headers,
      res.body,
      options.onInflated,
    ) as unknown as Response;
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
  readonly #onInflated: ((bytes: number) => void) | undefined;
  #decoded: Decoded | null = null;
  #web: ReadableStream<Uint8Array> | null = null;
  #used = false;

  constructor(
    url: string,
    status: number,
    headers: HeaderValues,
    body: Readable,
    onInflated?: (bytes: number) => void,
  ) {
    this.url = url;
    this.status = status;
    this.statusText = STATUS_CODES[status] ?? "";
    this.headers = new RecordHeaders(headers);
    this.#raw = body; // (undici listens for errors of a body nobody reads)
    this.#onInflated = onInflated;
  }

  /** The body as sent, decoded when the server compressed it. */
  #stream(): Decoded {
    return this.#decoded ??= decoded(
      () => this.#raw,
      this.headers.get("content-encoding"),
      this.#onInflated,
    );
  }

  #take(): Decoded {
    if (this.#used) throw new TypeError("Body is unusable: Body has already been read");
    this.#used = true;
    return this.#stream();
  }

  get body(): ReadableStream<Uint8Array> | null {
    // pulled chunk by chunk from the body (only a body of unknown length or a compressed one is
    // read this way)
    return this.#web ??= pulled(() => this.#take());
  }

  async text(): Promise<string> {
    const stream = this.#take();
    if (stream.encoding === null) {
      try {
        return await (this.#raw as unknown as { text(): Promise<string> }).text();
      } catch (e) {
        throw readError(e);
      }
    }
    return new TextDecoder().decode(await bytesOf(stream));
  }
}

/** The part of a fetch Response the collectors read, over the runtime's Response (Bun, Deno). */
class WebResponse {
  readonly url: string;
  readonly status: number;
  readonly statusText: string;
  readonly headers: Headers;
  readonly type: ResponseType;
  readonly #res: Response;
  readonly #encoding: string | null;
  readonly #onInflated: ((bytes: number) => void) | undefined;
  #web: ReadableStream<Uint8Array> | null = null;

  constructor(res: Response, onInflated?: (bytes: number) => void) {
    this.url = res.url;
    this.status = res.status;
    this.statusText = res.statusText;
    this.headers = res.headers;
    this.type = res.type;
    this.#res = res;
    this.#encoding = res.body === null ? null : encodingOf(res.headers.get("content-encoding"));
    this.#onInflated = onInflated;
  }

  #inflated(): Decoded {
    const body = this.#res.body as unknown as NodeReadableStream;
    return decoded(() => Readable.fromWeb(body), this.#encoding, this.#onInflated);
  }

  get body(): ReadableStream<Uint8Array> | null {
    if (this.#web === null && this.#res.body !== null) {
      this.#web = this.#encoding === null
        ? withReadErrors(this.#res.body)
        : pulled(() => this.#inflated());
    }
    return this.#web;
  }

  async text(): Promise<string> {
    if (this.#encoding !== null) {
      if (this.#res.bodyUsed) throw new TypeError("Body is unusable: Body has already been read");
      return new TextDecoder().decode(await bytesOf(this.#inflated()));
    }
    try {
      return await this.#res.text();
    } catch (e) {
      throw readError(e);
    }
  }
}

type NodeReadableStream = Parameters<typeof Readable.fromWeb>[0];

/** A body stream and how it was encoded (null: as sent, nothing to inflate). */
interface Decoded {
  stream: Readable;
  encoding: string | null;
  /** Tells the seam how far the body was inflated (once; a no-op when not compressed). */
  done(delivered: number): void;
}

/** The `content-encoding` we inflate (gzip, deflate, br), or null. */
function encodingOf(header: string | null): string | null {
  const encoding = (header ?? "").trim().toLowerCase();
  if (encoding === "x-gzip") return "gzip";
  return encoding === "gzip" || encoding === "deflate" || encoding === "br" ? encoding : null;
}

/** Thrown for a body that failed to arrive or to inflate: words for an error message. */
class BodyError extends Error {
  override name = "BodyError";
}

/**
 * The raw body (made on first use), inflated by node:zlib when `header` names an encoding we
 * inflate. The decoder runs only as far as it is read: it stops when its 16 KiB buffer is full
 * and nobody reads, however much one input chunk would inflate to.
 */
function decoded(
  raw: () => Readable,
  header: string | null,
  onInflated: ((bytes: number) => void) | undefined,
): Decoded {
  const encoding = encodingOf(header);
  if (encoding === null) return { stream: raw(), encoding, done: () => {} };
  const source = raw();
  const decoder = encoding === "gzip"
    ? zlib.createGunzip()
    : encoding === "deflate"
    ? zlib.createInflate()
    : zlib.createBrotliDecompress();
  // the raw body's errors reach the reader as read errors, the decoder's own as bad encoding
  source.on("error", (e) => decoder.destroy(readError(e) as Error));
  decoder.on("close", () => source.destroy());
  let reported = false;
  return {
    stream: source.pipe(decoder),
    encoding,
    done(delivered: number): void {
      if (reported) return;
      reported = true;
      onInflated?.(delivered + decoder.readableLength);
    },
  };
}

/**
 * The error a failed body read gives fetchCapped: short words, the same on every runtime where
 * the runtime tells what happened (an abort stays as it is: the caller words it).
 */
function readError(e: unknown): unknown {
  if (e instanceof BodyError || !(e instanceof Error)) return e;
  if (e.name === "AbortError" || e.name === "TimeoutError") return e;
  const code = (e as { code?: unknown }).code;
  // Bun: ECONNRESET with a hint to pass `verbose: true`; undici: "other side closed", "read
  // ECONNRESET". (Deno says "error reading a body from connection" for a close and a malformed
  // body alike: its words are kept.)
  if (code === "ECONNRESET" || code === "UND_ERR_SOCKET" || code === "EPIPE") {
    return new BodyError("connection closed while reading the body", { cause: e });
  }
  return new BodyError(e.message, { cause: e });
}

/** `e` from reading a body inflated from `encoding`: a read error, or the decoder's. */
function decodeError(e: unknown, encoding: string | null): unknown {
  if (encoding === null || e instanceof BodyError || !(e instanceof Error)) return readError(e);
  if (e.name === "AbortError") return e;
  return new BodyError(`invalid ${encoding} body: ${e.message}`, { cause: e });
}

/** The whole (decoded) body. */
async function bytesOf(body: Decoded): Promise<Uint8Array> {
  const chunks: Buffer[] = [];
  let size = 0;
  try {
    for await (const chunk of body.stream) {
      chunks.push(chunk as Buffer);
      size += (chunk as Buffer).byteLength;
    }
  } catch (e) {
    throw decodeError(e, body.encoding);
  } finally {
    body.done(size);
  }
  return Buffer.concat(chunks);
}

/** A web stream pulled chunk by chunk from a body stream (made on first use). */
function pulled(take: () => Decoded): ReadableStream<Uint8Array> {
  let body: Decoded | null = null;
  let chunks: AsyncIterator<Buffer> | null = null;
  let delivered = 0;
  const next = (): AsyncIterator<Buffer> =>
    chunks ??= (body = take()).stream[Symbol.asyncIterator]();
  return new ReadableStream<Uint8Array>({
    async pull(controller): Promise<void> {
      let r: IteratorResult<Buffer>;
      try {
        r = await next().next();
      } catch (e) {
        body?.done(delivered);
        throw decodeError(e, body?.encoding ?? null);
      }
      if (r.done) {
        body?.done(delivered);
        controller.close();
        return;
      }
      delivered += r.value.byteLength;
      controller.enqueue(new Uint8Array(r.value.buffer, r.value.byteOffset, r.value.byteLength));
    },
    async cancel(): Promise<void> {
      const it = next();
      body?.done(delivered);
      await it.return?.();
    },
  }, { highWaterMark: 0 });
}

/** The runtime's body stream, with the errors of {@linkcode readError}. */
function withReadErrors(body: ReadableStream<Uint8Array>): ReadableStream<Uint8Array> {
  let reader: ReadableStreamDefaultReader<Uint8Array> | null = null;
  return new ReadableStream<Uint8Array>({
    async pull(controller): Promise<void> {
      reader ??= body.getReader();
      let r: ReadableStreamReadResult<Uint8Array>;
      try {
        r = await reader.read();
      } catch (e) {
        throw readError(e);
      }
      if (r.done) controller.close();
      else controller.enqueue(r.value);
    },
    async cancel(reason): Promise<void> {
      await (reader === null ? body.cancel(reason) : reader.cancel(reason));
    },
  }, { highWaterMark: 0 });
}
