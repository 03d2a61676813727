/**
 * PEM certificates: a certificate with its key, and CA bundles split and parsed. The lowest
 * of the certificate modules: certs.ts (serving certificates), cert_issue.ts (issuing) and
 * client_cert.ts (client certificates) build on it, and it imports none of them.
 *
 * @module
 */
import { X509Certificate } from "node:crypto";

/** A certificate (PEM, leaf first) and its private key (PEM). */
export interface CertificateAndKey {
  cert: string;
  key: string;
}

/** One day in ms (certificate validity is counted in days). */
export const DAY_MS = 86_400_000;

/** Split a PEM bundle into its certificates (PEM blocks); other blocks are skipped. */
export function splitPemCertificates(pem: string): string[] {
  return pem.match(/-----BEGIN CERTIFICATE-----[\s\S]+?-----END CERTIFICATE-----/g) ?? [];
}

/**
 * Parse a PEM CA bundle. Throws when it holds no certificate or a block does not parse;
 * `source` names the bundle in the message.
 */
export function parseCertificateBundle(pem: string, source: string): X509Certificate[] {
  const blocks = splitPemCertificates(pem);
  if (blocks.length === 0) throw new Error(`no certificate found in ${source}`);
  return blocks.map((block, i) => {
    try {
      return new X509Certificate(block);
    } catch (err) {
      throw new Error(`invalid certificate #${i + 1} in ${source}: ${(err as Error).message}`);
    }
  });
}
