/**
 * The `fetch` the collectors get: a small fetch on our own HTTP/1.1 client (`http1_client.ts`),
 * the same on Node, Deno and Bun.
 *
 * Why our own client: the collectors read answers from endpoints an HPA author chooses, and each
 * runtime's client reads a hostile answer with its own leniency and costs (http1_client.ts says
 * what was measured). Ours reads every answer by the rules of our parser, in time and memory
 * linear in the bytes read, and only as fast as fetchCapped pulls, so its cap bounds what is
 * read off the wire.
 *
 * Why not Node's fetch either: every response it returns is registered in a
 * FinalizationRegistry (so that an unread body is cancelled when the response is collected),
 * and V8's young-generation collector keeps registered objects alive, so each response with its
 * headers, streams and promises is promoted to the old generation (measured on Node 20.20:
 * 224-242 MB promoted for 20,000 GETs, against 21 MB for undici's `request`). The responses here
 * are plain objects.
 *
 * Why we inflate ourselves: an HPA author chooses the URL, so a backend may answer a gzip
 * bomb (255 KiB that inflate to 256 MiB). No compression is asked for (no `accept-encoding`),
 * and a gzip, deflate or br body a server sends anyway is inflated by node:zlib streams, which
 * inflate only as far as they are read (measured on all three runtimes: 1 MiB read of a bomb,
 * about 1 MiB inflated), so no more than the reader's cap and a chunk or two is ever inflated.
 *
 * Of a response it has what fetchCapped (http_get.ts), the one reader of the collectors'
 * fetch, uses: status, statusText, type, headers.get, text, and body as a web stream with
 * cancel. What differs from fetch:
 * - redirects are never followed (every collector asks for `redirect: "manual"`; a call that
 *   asks to follow, or passes a Request, goes to the runtime's fetch);
 * - `statusText` is the standard reason phrase of the status;
 * - HTTP/1.1 only; `HTTP_PROXY`, `HTTPS_PROXY` and `NO_PROXY` as Go reads them (http
 *   proxies only: `http_proxy.ts`); TLS verified against the runtime's roots;
 * - a body that fails to arrive fails with short words the same on every runtime (`connection
 *   closed while reading the body`, `malformed answer: <rule>`, `invalid gzip body: <why>`).
 */
import { STATUS_CODES } from "node:http";
import { Readable } from "node:stream";
import * as zlib from "node:zlib";
import { ByteBuffer } from "./byte_buffer.ts";
import process from "node:process";
import { type Http1Body, Http1Client, type Http1ClientOptions } from "./http1_client.ts";
import { proxyFromEnv } from "./http_proxy.ts";

/** A body's text (UTF-8, a BOM dropped and bad bytes replaced, as Response.text()). */
const UTF8 = new TextDecoder();

/** A fetch and the connections behind it. */
export interface CollectorFetch {
  fetch: typeof fetch;
  /** Closes idle connections and releases the pool. */
  close(): Promise<void>;
}

/** Options of {@linkcode collectorFetch}. */
export interface CollectorFetchOptions extends Http1ClientOptions {
  /**
   * Called once a compressed body is done (read to its end, cancelled or failed) with the
   * bytes it was inflated to: what was read and what the decoder still held (for tests).
   */
  onInflated?: (bytes: number) => void;
}

/**
 * The fetch for the collectors, on our HTTP/1.1 client.
 *
 * @example
 * ```ts
 * const http = collectorFetch();
 * const engine = new Engine({ ...options, fetch: http.fetch });
 * await http.close();
 * ```
 */
export function collectorFetch(options: CollectorFetchOptions = {}): CollectorFetch {
  // the environment's proxies, as Go's clients (kube-metrics-adapter, KEDA) use them
  const client = new Http1Client({ proxy: proxyFromEnv(process.env), ...options });
  const clientFetch = async (
    input: string | URL | Request,
    init?: RequestInit,
  ): Promise<Response> => {
    if (input instanceof Request || (init?.redirect ?? "follow") !== "manual") {
      return await globalThis.fetch(input, init);
    }
    const url = typeof input === "string" ? input : input.href;
    // the address the link-local check accepted (collectors/http_get.ts CONNECT_ADDRESS_FIELD)
    const address = (init as { connectAddress?: unknown } | undefined)?.connectAddress;
    const res = await client.request(url, {
      method: init?.method ?? "GET",
      headers: headerRecord(init?.headers),
      body: bodyOf(init?.body),
      signal: init?.signal ?? undefined,
      ...(typeof address === "string" ? { address } : {}),
    });
    return new ClientResponse(
      url,
      res.head.status,
      res.head.headers,
      res.body,
      options.onInflated,
    ) as unknown as Response;
  };
  return { fetch: clientFetch as typeof fetch, close: () => client.close() };
}

/** The request headers as a record (lower-case names). */
function headerRecord(headers: HeadersInit | undefined): Record<string, string> {
  const out: Record<string, string> = {};
  if (headers !== undefined) {
    if (headers instanceof Headers || Array.isArray(headers)) {
      new Headers(headers).forEach((value, name) => (out[name] = value));
    } else {
      for (const [name, value] of Object.entries(headers)) out[name.toLowerCase()] = value;
    }
  }
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

/** The part of a fetch Response the collectors read, over our client's response body. */
class ClientResponse {
  readonly url: string;
  readonly status: number;
  readonly statusText: string;
  readonly headers: RecordHeaders;
  readonly type = "basic";
  readonly #raw: Http1Body;
  readonly #encoding: string | null;
  readonly #onInflated: ((bytes: number) => void) | undefined;
  #web: ReadableStream<Uint8Array> | null = null;
  #used = false;

  constructor(
    url: string,
    status: number,
    headers: HeaderValues,
    body: Http1Body,
    onInflated?: (bytes: number) => void,
  ) {
    this.url = url;
    this.status = status;
    this.statusText = STATUS_CODES[status] ?? "";
    this.headers = new RecordHeaders(headers);
    this.#raw = body;
    this.#encoding = encodingOf(this.headers.get("content-encoding"));
    this.#onInflated = onInflated;
  }

  #take(): void {
    if (this.#used) throw new TypeError("Body is unusable: Body has already been read");
    this.#used = true;
  }

  #inflated(): Decoded {
    return decoded(() => readableOf(this.#raw), this.#encoding, this.#onInflated);
  }

  get body(): ReadableStream<Uint8Array> | null {
    if (this.#web === null) {
      this.#web = this.#encoding === null ? webOf(this.#raw, () => this.#take()) : pulled(() => {
        this.#take();
        return this.#inflated();
      });
    }
    return this.#web;
  }

  async text(): Promise<string> {
    this.#take();
    if (this.#encoding !== null) {
      return UTF8.decode(await bytesOf(this.#inflated()));
    }
    // most answers come in one piece: decoded as it is, without a buffer to gather them
    let first: Uint8Array | null = null;
    let bytes: ByteBuffer | null = null;
    try {
      for (;;) {
        const piece = await this.#raw.read();
        if (piece === null) break;
        if (first === null) first = piece;
        else {
          if (bytes === null) {
            bytes = new ByteBuffer();
            bytes.append(first);
          }
          bytes.append(piece);
        }
      }
    } catch (e) {
      throw readError(e);
    }
    return UTF8.decode(bytes?.bytes() ?? first ?? new Uint8Array(0));
  }
}

/** The body as a node stream (for node:zlib), pulled piece by piece. */
function readableOf(body: Http1Body): Readable {
  return new Readable({
    read(): void {
      body.read().then((piece) => this.push(piece), (e) => this.destroy(e as Error));
    },
    destroy(e, callback): void {
      body.cancel();
      callback(e);
    },
  });
}

/** The body as a web stream (made on first use), with the errors of {@linkcode readError}. */
function webOf(body: Http1Body, take: () => void): ReadableStream<Uint8Array> {
  let taken = false;
  return new ReadableStream<Uint8Array>({
    async pull(controller): Promise<void> {
      if (!taken) {
        take();
        taken = true;
      }
      let piece: Uint8Array | null;
      try {
        piece = await body.read();
      } catch (e) {
        throw readError(e);
      }
      if (piece === null) controller.close();
      else controller.enqueue(piece);
    },
    cancel(): void {
      body.cancel();
    },
  }, { highWaterMark: 0 });
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
 * The error a failed body read gives fetchCapped: short words, the same on every runtime (an
 * abort stays as it is: the caller words it).
 */
function readError(e: unknown): unknown {
  if (e instanceof BodyError || !(e instanceof Error)) return e;
  if (e.name === "AbortError" || e.name === "TimeoutError") return e;
  const code = (e as { code?: unknown }).code;
  // a reset socket (the client's own errors already say what happened in short words)
  if (code === "ECONNRESET" || code === "EPIPE") {
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
