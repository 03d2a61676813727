/**
 * The health endpoints (`/healthz`, `/livez`, `/readyz` and one path per check) as
 * k8s.io/apiserver's healthz handler answers them.
 *
 * @module
 */
import { text } from "./responses.ts";

/** A named check: null when healthy, else why not. */
export interface HealthCheck {
  name: string;
  check(): string | null;
}

/** As k8s.io/apiserver's healthz handler: `ok`, or with `?verbose` one line per check. */
export function health(name: string, checks: HealthCheck[], url: URL): Response {
  const excluded = new Set(url.searchParams.getAll("exclude"));
  const verbose = url.searchParams.has("verbose");
  let out = "";
  let failed = false;
  for (const c of checks) {
    if (excluded.has(c.name)) {
      out += `[+]${c.name} excluded: ok\n`;
      continue;
    }
    const err = c.check();
    if (err === null) out += `[+]${c.name} ok\n`;
    else {
      failed = true;
      out += `[-]${c.name} failed: reason withheld\n`;
    }
  }
  if (failed) return text(`${out}${name} check failed\n`, 500);
  return text(verbose ? `${out}${name} check passed\n` : "ok");
}

/** The answer of `/<endpoint>/<check>`. */
export function oneCheck(c: HealthCheck): Response {
  const err = c.check();
  return err === null ? text("ok") : text(`internal server error: ${err}\n`, 500);
}
