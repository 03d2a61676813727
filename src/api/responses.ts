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

/** A 200 JSON answer whose bytes are kept with it (made once, written many times). */
export interface ReadyBody {
  body: string;
  bytes: Uint8Array;
}

/** A ready body of `body`. */
export function readyBody(body: string): ReadyBody {
  return { body, bytes: utf8.encode(body) };
}

/** The 200 answer of a ready body. */
export function plainReady(ready: ReadyBody): PlainResponse {
  return { status: 200, headers: STATUS_HEADERS, body: ready.body, bytes: ready.bytes };
}

/** The Response of a plain answer. */
export function toResponse(plain: PlainResponse): Response {
  return new Response(plain.body, { status: plain.status, headers: { ...plain.headers } });
}

/** A text Response (as Go's health handlers and 404 write it). */
export function text(body: string, status = 200): Response {
  return new Response(body, {
    status,
    headers: { "content-type": "text/plain; charset=utf-8", "x-content-type-options": "nosniff" },
  });
}
