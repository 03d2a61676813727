/**
 * The front proxy's identity headers (`X-Remote-User`, `X-Remote-Group`, `X-Remote-Extra-*`
 * by default; the names come from the requestheader settings): reading the user out of them,
 * telling them from other headers in raw header lists, and removing them before the app sees
 * a request.
 *
 * @module
 */
import type { ConnectionInfo } from "../runtime/serve.ts";
import type { UserInfo } from "./auth_user.ts";

/** The front-proxy (requestheader) settings. */
export interface RequestHeaderConfig {
  /** CA bundle (PEM) that the front proxy's client certificate must chain to. */
  clientCa: string;
  /** Allowed common names of that certificate; empty allows any. */
  allowedNames: string[];
  usernameHeaders: string[];
  uidHeaders: string[];
  groupHeaders: string[];
  extraHeaderPrefixes: string[];
}

/** Header values by lower-cased name, keeping repeated headers apart. */
export function headerValues(
  request: Request | null,
  connection: ConnectionInfo | undefined,
): Map<string, string[]> {
  const raw = connection?.rawHeaders ?? [];
  const byName = new Map<string, string[]>();
  if (raw.length > 0) {
    for (let i = 0; i + 1 < raw.length; i += 2) {
      const name = raw[i].toLowerCase();
      const list = byName.get(name);
      if (list) list.push(raw[i + 1]);
      else byName.set(name, [raw[i + 1]]);
    }
  } else if (request) {
    // no raw headers: repeated headers arrive joined with ", "
    request.headers.forEach((value, name) => byName.set(name.toLowerCase(), value.split(", ")));
  }
  return byName;
}

function unescapeExtraKey(key: string): string {
  try {
    return decodeURIComponent(key);
  } catch {
    return key;
  }
}

/** Reads the front-proxy identity headers; null when no user name is set. */
export function userFromHeaders(
  headers: Map<string, string[]>,
  config: RequestHeaderConfig,
): UserInfo | null {
  const first = (names: string[]): string => {
    for (const n of names) {
      const v = headers.get(n.trim().toLowerCase())?.[0];
      if (v) return v;
    }
    return "";
  };
  const name = first(config.usernameHeaders);
  if (!name) return null;
  const groups: string[] = [];
  for (const n of config.groupHeaders) {
    for (const v of headers.get(n.trim().toLowerCase()) ?? []) if (v) groups.push(v);
  }
  const extra: Record<string, string[]> = {};
  for (const prefix of config.extraHeaderPrefixes) {
    const p = prefix.trim().toLowerCase();
    for (const [headerName, values] of headers) {
      if (!headerName.startsWith(p)) continue;
      const key = unescapeExtraKey(headerName.slice(p.length));
      (extra[key] ??= []).push(...values);
    }
  }
  const uid = first(config.uidHeaders);
  return { name, ...(uid ? { uid } : {}), groups, extra };
}

/** Every header that may carry a front-proxy identity (removed before the app sees them). */
export function identityHeaderNames(
  request: Request,
  config: RequestHeaderConfig | null,
): string[] {
  const names = new Set<string>(["x-remote-user", "x-remote-group", "x-remote-uid"]);
  const prefixes = ["x-remote-extra-"];
  if (config) {
    for (const n of [...config.usernameHeaders, ...config.groupHeaders, ...config.uidHeaders]) {
      names.add(n.trim().toLowerCase());
    }
    prefixes.push(...config.extraHeaderPrefixes.map((p) => p.trim().toLowerCase()));
  }
  const out = [...names].filter((n) => request.headers.has(n));
  request.headers.forEach((_v, name) => {
    const n = name.toLowerCase();
    if (prefixes.some((p) => p && n.startsWith(p))) out.push(n);
  });
  return out;
}

export function stripHeaders(request: Request, names: string[]): void {
  for (const n of names) {
    try {
      request.headers.delete(n);
    } catch {
      // immutable headers: the identity is taken from the verified user anyway
    }
  }
}

export interface IdentityHeaders {
  /** Exact names (lower case) by length: most headers are passed over on their length. */
  byLength: Map<number, string[]>;
  /** Prefixes of extra headers (lower case). */
  prefixes: string[];
}

export function identityHeadersOf(rh: RequestHeaderConfig): IdentityHeaders {
  const byLength = new Map<number, string[]>();
  for (const n of [...rh.usernameHeaders, ...rh.groupHeaders, ...rh.uidHeaders]) {
    const name = n.trim().toLowerCase();
    const same = byLength.get(name.length) ?? [];
    if (!same.includes(name)) same.push(name);
    byLength.set(name.length, same);
  }
  const prefixes = rh.extraHeaderPrefixes.map((p) => p.trim().toLowerCase()).filter((p) => p);
  return { byLength, prefixes };
}

/** Whether `name`, in ASCII lower case, starts with `lower` (header names are ASCII tokens). */
function startsWithLower(name: string, lower: string): boolean {
  if (name.length < lower.length) return false;
  for (let i = 0; i < lower.length; i++) {
    let c = name.charCodeAt(i);
    if (c >= 65 && c <= 90) c += 32;
    if (c !== lower.charCodeAt(i)) return false;
  }
  return true;
}

export function isIdentityHeader(name: string, names: IdentityHeaders): boolean {
  const same = names.byLength.get(name.length);
  if (same !== undefined) {
    for (const n of same) if (name === n || startsWithLower(name, n)) return true;
  }
  for (const p of names.prefixes) if (startsWithLower(name, p)) return true;
  return false;
}

/** Whether `raw` carries exactly the identity headers `sent` (same names, values and order). */
export function sentAgain(raw: readonly string[], names: IdentityHeaders, sent: string[]): boolean {
  let j = 0;
  for (let i = 0; i + 1 < raw.length; i += 2) {
    const name = raw[i];
    if (!isIdentityHeader(name, names)) continue;
    if (j + 1 >= sent.length || sent[j] !== name || sent[j + 1] !== raw[i + 1]) return false;
    j += 2;
  }
  return j === sent.length;
}

/** The identity headers of `raw`, as sent, in order. */
export function identityHeadersSent(raw: readonly string[], names: IdentityHeaders): string[] {
  const sent: string[] = [];
  for (let i = 0; i + 1 < raw.length; i += 2) {
    if (isIdentityHeader(raw[i], names)) sent.push(raw[i], raw[i + 1]);
  }
  return sent;
}

/** A key of identity headers as sent: names lower-cased; the user is a function of it. */
export function identityKey(sent: string[]): string {
  let key = "";
  for (let i = 0; i + 1 < sent.length; i += 2) key += `${sent[i].toLowerCase()}\n${sent[i + 1]}\n`;
  return key;
}
