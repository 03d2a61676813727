/**
 * Link-local addresses (169.254.0.0/16, fe80::/10, and the IPv6 forms that carry a 169.254
 * address): cloud metadata endpoints live there, and an HPA author must not point the adapter
 * at them. Pure address maths; resolving a host name is the collectors' part.
 */

/** The four octets of a dotted IPv4 address, or null. */
export function ipv4Octets(host: string): number[] | null {
  const m = /^(\d{1,3})\.(\d{1,3})\.(\d{1,3})\.(\d{1,3})$/.exec(host);
  if (!m) return null;
  const o = m.slice(1).map(Number);
  return o.every((n) => n <= 255) ? o : null;
}

/** The eight 16-bit words of an IPv6 address (`::`, a dotted IPv4 tail, a `%zone`), or null. */
export function ipv6Words(address: string): number[] | null {
  let h = address.toLowerCase().replace(/%.*$/, "");
  if (!h.includes(":") || !/^[0-9a-f:.]+$/.test(h)) return null;
  const lastColon = h.lastIndexOf(":");
  const tail = h.slice(lastColon + 1);
  if (tail.includes(".")) {
    const o = ipv4Octets(tail);
    if (!o) return null;
    h = `${h.slice(0, lastColon + 1)}${((o[0] << 8) | o[1]).toString(16)}:${
      ((o[2] << 8) | o[3]).toString(16)
    }`;
  }
  const words = (part: string): number[] | null => {
    if (part === "") return [];
    const out = part.split(":").map((w) => /^[0-9a-f]{1,4}$/.test(w) ? parseInt(w, 16) : NaN);
    return out.some(Number.isNaN) ? null : out;
  };
  const halves = h.split("::");
  if (halves.length > 2) return null;
  const head = words(halves[0]);
  const rest = halves.length === 2 ? words(halves[1]) : [];
  if (!head || !rest) return null;
  if (halves.length === 1) return head.length === 8 ? head : null;
  const fill = 8 - head.length - rest.length;
  return fill < 1 ? null : [...head, ...new Array<number>(fill).fill(0), ...rest];
}

/**
 * Whether an IP address is link-local: 169.254.0.0/16, fe80::/10, or an IPv6 form that carries
 * a 169.254 address (IPv4-mapped `::ffff:169.254.x.y`, IPv4-translated, IPv4-compatible,
 * NAT64 `64:ff9b::/96`). False for anything that is not an IP address (a host name).
 */
export function isLinkLocalAddress(address: string): boolean {
  const v4 = ipv4Octets(address);
  if (v4) return v4[0] === 169 && v4[1] === 254;
  const w = ipv6Words(address);
  if (!w) return false;
  if ((w[0] & 0xffc0) === 0xfe80) return true;
  const zero = (from: number, to: number): boolean => w.slice(from, to).every((x) => x === 0);
  const embedsV4 = (zero(0, 5) && (w[5] === 0xffff || w[5] === 0)) ||
    (zero(0, 4) && w[4] === 0xffff && w[5] === 0) ||
    (w[0] === 0x64 && w[1] === 0xff9b && zero(2, 6));
  return embedsV4 && w[6] === 0xa9fe;
}

/**
 * Whether a URL host (as `new URL().hostname` gives it: IPv6 in brackets) is a link-local
 * address literal: see {@linkcode isLinkLocalAddress}. A host name is not: resolve it with
 * {@linkcode checkLinkLocalTarget}.
 */
export function isLinkLocalHost(hostname: string): boolean {
  return isLinkLocalAddress(hostname.replace(/^\[|\]$/g, "").toLowerCase());
}
