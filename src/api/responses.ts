/**
 * The app's answers: JSON and text Responses, the plain (status, headers, body) answers of the
 * server's fast path, and 200 JSON bodies made once and written many times with their bytes.
 *
 * @module
 */
import type { PlainResponse } from "../runtime/serve.ts";
import { STATUS_HEADERS } from "./status.ts";

/** A JSON Response (the headers of the metrics API). */
export function json(body: unknown, status = 200): Response {
  return new Response(JSON.stringify(body), { status, headers: { ...STATUS_HEADERS } });
}

/** A JSON answer as plain status, headers and body. */
export function plainJson(body: string, status = 200): PlainResponse {
  return { status, headers: STATUS_HEADERS, body };
}

const utf8 = new TextEncoder();
const utf8Text = new TextDecoder();

/**
 * A 200 JSON answer made once and written many times: only its UTF-8 bytes are kept (the
 * server writes them as they are); its text is decoded when someone asks for it (the regular
 * path, tests).
 */
export class ReadyBody implements PlainResponse {
  readonly status = 200;
  readonly headers = STATUS_HEADERS;
  constructor(readonly bytes: Uint8Array) {}
  get body(): string {
    return utf8Text.decode(this.bytes);
  }
}

/** A ready body of `body`. */
export function readyBody(body: string): ReadyBody {
  return new ReadyBody(utf8.encode(body));
}

/** The 200 answer of a ready body: the body itself (it is never changed). */
export function plainReady(ready: ReadyBody): PlainResponse {
  return ready;
}

/** The Response of a plain answer. */
export function toResponse(plain: PlainResponse): Response {
  return new Response((plain.bytes as Uint8Array<ArrayBuffer> | undefined) ?? plain.body, {
    status: plain.status,
    headers: { ...plain.headers },
  });
}

/** A text Response (as Go's health handlers and 404 write it). */
export function text(body: string, status = 200): Response {
  return new Response(body, {
    status,
    headers: { "content-type": "text/plain; charset=utf-8", "x-content-type-options": "nosniff" },
  });
}
