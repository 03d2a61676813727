/**
 * Client certificates: which CA bundle the chain of a TLS-verified peer certificate ends at,
 * checked once per connection and bundle. The TLS layer verifies a client certificate against
 * the union of the client CA and the requestheader CA; this module tells them apart.
 *
 * @module
 */
import { X509Certificate } from "node:crypto";
import type { PeerCertificate } from "../runtime/serve.ts";
import { goQuote } from "./auth_status.ts";
import { parseCertificateBundle } from "./pem.ts";

export interface ParsedBundle {
  pem: string;
  certs: X509Certificate[];
  fingerprints: Set<string>;
}

export function parseBundle(pem: string, source: string): ParsedBundle | null {
  if (!pem.trim()) return null;
  const certs = parseCertificateBundle(pem, source);
  return { pem, certs, fingerprints: new Set(certs.map((c) => c.fingerprint256)) };
}

const parsedChains = new WeakMap<PeerCertificate, X509Certificate[]>();

function chainOf(peer: PeerCertificate): X509Certificate[] {
  let chain = parsedChains.get(peer);
  if (!chain) {
    chain = peer.chain.map((der) => new X509Certificate(der));
    parsedChains.set(peer, chain);
  }
  return chain;
}

/**
 * The outcome of {@linkcode chainEndsIn} for each bundle and peer certificate. A peer
 * certificate is one object per connection (runtime/serve.ts) and a bundle one object per
 * loaded CA file, so a connection's chain is checked once per bundle, not on every request: a
 * signature check took 18.6% of the CPU while the aggregator's reads went over 8 connections.
 */
const chainChecks = new WeakMap<ParsedBundle, WeakMap<PeerCertificate, string | null>>();

/**
 * Checks that the TLS layer verified `peer` and that its chain ends at a certificate of
 * `bundle`. Returns an error message, or null when it does.
 */
export function verifyPeer(
  peer: PeerCertificate,
  bundle: ParsedBundle,
  now: number,
): string | null {
  if (!peer.authorized) {
    return `verifying certificate ${peerId(peer)} failed: ${
      peer.authorizationError ?? "not verified"
    }`;
  }
  if (peer.notAfter && peer.notAfter <= now) {
    return `verifying certificate ${peerId(peer)} failed: x509: certificate has expired`;
  }
  let checked = chainChecks.get(bundle);
  if (!checked) chainChecks.set(bundle, checked = new WeakMap());
  let outcome = checked.get(peer);
  if (outcome === undefined) {
    outcome = chainEndsIn(peer, bundle, peerId(peer));
    checked.set(peer, outcome);
  }
  return outcome;
}

/** How errors name a client certificate (made only for an error: it was made per request). */
function peerId(peer: PeerCertificate): string {
  return `CN=${goQuote(peer.commonName)}`;
}

/** The chain part of {@linkcode verifyPeer}: null when `peer`'s chain ends in `bundle`. */
function chainEndsIn(peer: PeerCertificate, bundle: ParsedBundle, id: string): string | null {
  let chain: X509Certificate[];
  try {
    chain = chainOf(peer);
  } catch (err) {
    return `verifying certificate ${id} failed: ${(err as Error).message}`;
  }
  for (let i = 0; i < chain.length; i++) {
    const cert = chain[i];
    if (bundle.fingerprints.has(cert.fingerprint256)) return null;
    const next = chain[i + 1];
    if (next) {
      if (!(cert.checkIssued(next) && cert.verify(next.publicKey))) break;
      continue;
    }
    // the TLS layer may stop below the root: accept an issuer from the bundle
    if (bundle.certs.some((ca) => cert.checkIssued(ca) && cert.verify(ca.publicKey))) return null;
  }
  return `verifying certificate ${id} failed: x509: certificate signed by unknown authority`;
}
