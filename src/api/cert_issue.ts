/**
 * Issuing certificates: a CA, or a leaf for servers and/or clients, with a new RSA 2048 key.
 * The adapter makes its self-signed serving certificate with it (certs.ts loads this module
 * only then); tests issue CA and client certificates to exercise client authentication.
 *
 * X.509 encoding is node-forge's (pure JavaScript, no global side effects, same on Node, Deno
 * and Bun); keys come from `node:crypto`.
 *
 * @module
 */
import forge from "node-forge";
import { generateKeyPairSync, randomBytes } from "node:crypto";
import { isIP } from "node:net";
import { type CertificateAndKey, DAY_MS } from "./pem.ts";

/** Options of {@linkcode createCertificate}. */
export interface CertificateOptions {
  commonName: string;
  /** Subject O values (Kubernetes reads them as groups). */
  organizations?: string[];
  /** Subject alternative names: DNS names and IP addresses (v4 or v6) mixed. */
  hosts?: string[];
  /** A CA certificate (basicConstraints CA, keyCertSign) instead of a leaf. */
  isCa?: boolean;
  /** Extended key usages of a leaf; default both server and client authentication. */
  extendedKeyUsages?: Array<"serverAuth" | "clientAuth">;
  /** The CA that signs it; self-signed when absent. */
  issuer?: CertificateAndKey;
  /** Start of validity, ms since the epoch (default: one minute before `now`). */
  notBefore?: number;
  /** End of validity, ms since the epoch (default: `now` + 365 days). */
  notAfter?: number;
  /** The current time, ms since the epoch (default: the clock). */
  now?: number;
}

function newKeyPair(): { privatePem: string; publicPem: string } {
  const { privateKey, publicKey } = generateKeyPairSync("rsa", {
    modulusLength: 2048,
    publicKeyEncoding: { type: "spki", format: "pem" },
    privateKeyEncoding: { type: "pkcs8", format: "pem" },
  });
  return { privatePem: privateKey, publicPem: publicKey };
}

function serialNumber(): string {
  const bytes = randomBytes(16);
  bytes[0] &= 0x7f; // positive
  bytes[0] |= 0x10; // no leading zero byte to strip
  return bytes.toString("hex");
}

function subjectAttributes(
  commonName: string,
  organizations: string[],
): forge.pki.CertificateField[] {
  return [
    ...organizations.map((value) => ({ shortName: "O", value })),
    ...(commonName ? [{ shortName: "CN", value: commonName }] : []),
  ];
}

/**
 * Create a certificate with a new RSA 2048 key: a CA, or a leaf for servers and/or clients,
 * self-signed or signed by `issuer`.
 *
 * @example
 * ```ts
 * const ca = createCertificate({ commonName: "front-proxy-ca", isCa: true });
 * const proxy = createCertificate({ commonName: "front-proxy-client", issuer: ca,
 *   extendedKeyUsages: ["clientAuth"] });
 * ```
 */
export function createCertificate(options: CertificateOptions): CertificateAndKey {
  const now = options.now ?? Date.now();
  const pair = newKeyPair();
  const cert = forge.pki.createCertificate();
  cert.publicKey = forge.pki.publicKeyFromPem(pair.publicPem);
  cert.serialNumber = serialNumber();
  cert.validity.notBefore = new Date(options.notBefore ?? now - 60_000);
  cert.validity.notAfter = new Date(options.notAfter ?? now + 365 * DAY_MS);
  cert.setSubject(subjectAttributes(options.commonName, options.organizations ?? []));

  let signingKey = forge.pki.privateKeyFromPem(pair.privatePem);
  const extensions: any[] = [];
  if (options.issuer) {
    const issuerCert = forge.pki.certificateFromPem(options.issuer.cert);
    cert.setIssuer(issuerCert.subject.attributes);
    signingKey = forge.pki.privateKeyFromPem(options.issuer.key);
    extensions.push({
      name: "authorityKeyIdentifier",
      keyIdentifier: issuerCert.generateSubjectKeyIdentifier().getBytes(),
    });
  } else {
    cert.setIssuer(cert.subject.attributes);
  }
  extensions.push({ name: "subjectKeyIdentifier" });
  if (options.isCa) {
    extensions.push(
      { name: "basicConstraints", cA: true, critical: true },
      {
        name: "keyUsage",
        keyCertSign: true,
        cRLSign: true,
        digitalSignature: true,
        critical: true,
      },
    );
  } else {
    const usages = options.extendedKeyUsages ?? ["serverAuth", "clientAuth"];
    extensions.push(
      { name: "basicConstraints", cA: false, critical: true },
      { name: "keyUsage", digitalSignature: true, keyEncipherment: true, critical: true },
      {
        name: "extKeyUsage",
        serverAuth: usages.includes("serverAuth"),
        clientAuth: usages.includes("clientAuth"),
      },
    );
  }
  const hosts = options.hosts ?? [];
  if (hosts.length > 0) {
    extensions.push({
      name: "subjectAltName",
      altNames: hosts.map((h) => (isIP(h) ? { type: 7, ip: h } : { type: 2, value: h })),
    });
  }
  cert.setExtensions(extensions);
  cert.sign(signingKey, forge.md.sha256.create());
  return { cert: forge.pki.certificateToPem(cert), key: pair.privatePem };
}
