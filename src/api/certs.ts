/**
 * Serving certificates: load `--tls-cert-file`/`--tls-private-key-file`, or generate a
 * self-signed certificate for localhost into `--cert-dir` (`apiserver.crt`, `apiserver.key`)
 * and reuse it while it is valid, as the Go generic API server does.
 *
 * Issuing is in cert_issue.ts (node-forge), loaded only when a certificate must be made; PEM
 * parsing is in pem.ts. Checks use `node:crypto` `X509Certificate`.
 */
import { createPublicKey, randomBytes, X509Certificate } from "node:crypto";
import { mkdir, readFile, rename, writeFile } from "node:fs/promises";
import { isIP } from "node:net";
import { join } from "node:path";
import { type CertificateAndKey, DAY_MS, splitPemCertificates } from "./pem.ts";

// (tests/e2e, tests/cluster and tests/fakes import the pair's type from here)
export type { CertificateAndKey } from "./pem.ts";

/**
 * Check that `pair` is usable for serving: the certificate parses, the key is its key, and it
 * is valid at `now`. Throws with a message naming `source`.
 */
export function checkServingCertificate(
  pair: CertificateAndKey,
  options: { source: string; now?: number },
): X509Certificate {
  const [leafPem] = splitPemCertificates(pair.cert);
  if (!leafPem) throw new Error(`no certificate found in ${options.source}`);
  let leaf: X509Certificate;
  try {
    leaf = new X509Certificate(leafPem);
  } catch (err) {
    throw new Error(`invalid certificate in ${options.source}: ${(err as Error).message}`);
  }
  let keySpki: Buffer;
  try {
    keySpki = createPublicKey(pair.key).export({ type: "spki", format: "der" }) as Buffer;
  } catch (err) {
    throw new Error(`invalid private key in ${options.source}: ${(err as Error).message}`);
  }
  const certSpki = leaf.publicKey.export({ type: "spki", format: "der" }) as Buffer;
  if (!keySpki.equals(certSpki)) {
    throw new Error(`private key does not match certificate in ${options.source}`);
  }
  const now = options.now ?? Date.now();
  const notAfter = Date.parse(leaf.validTo);
  if (Date.parse(leaf.validFrom) > now || notAfter <= now) {
    throw new Error(
      `certificate in ${options.source} is not valid now (valid from ${leaf.validFrom} to ${leaf.validTo})`,
    );
  }
  return leaf;
}

/** Options of {@linkcode loadCertificateFiles}. */
export interface CertificateFiles {
  /** `--tls-cert-file`: PEM, leaf first, then intermediates. */
  certFile: string;
  /** `--tls-private-key-file`. */
  keyFile: string;
  now?: number;
}

/**
 * Read and check `--tls-cert-file` and `--tls-private-key-file`.
 *
 * @example
 * ```ts
 * const { cert, key } = await loadCertificateFiles({ certFile: "tls.crt", keyFile: "tls.key" });
 * ```
 */
export async function loadCertificateFiles(files: CertificateFiles): Promise<CertificateAndKey> {
  const read = async (path: string, flag: string): Promise<string> => {
    try {
      return await readFile(path, "utf8");
    } catch (err) {
      throw new Error(`cannot read ${flag} "${path}": ${(err as Error).message}`);
    }
  };
  const pair = {
    cert: await read(files.certFile, "--tls-cert-file"),
    key: await read(files.keyFile, "--tls-private-key-file"),
  };
  checkServingCertificate(pair, {
    source: `"${files.certFile}" and "${files.keyFile}"`,
    now: files.now,
  });
  return pair;
}

/** Options of {@linkcode ensureSelfSignedCertificate}. */
export interface SelfSignedOptions {
  /** `--cert-dir`. */
  certDir: string;
  /** Names and addresses besides localhost, 127.0.0.1 and ::1 (e.g. the service DNS names). */
  extraHosts?: string[];
  /** The current time, ms since the epoch. */
  now?: number;
  /** Validity of a new certificate in days (default 365). */
  validDays?: number;
}

/** A serving certificate and where it is stored. */
export interface StoredCertificate extends CertificateAndKey {
  certFile: string;
  keyFile: string;
  /** True when it was made now, false when an existing one was reused. */
  generated: boolean;
}

/** The names a self-signed serving certificate covers. */
export function selfSignedHosts(extraHosts: string[] = []): string[] {
  const hosts = ["localhost", "127.0.0.1", "::1"];
  for (const h of extraHosts) if (h && !hosts.includes(h)) hosts.push(h);
  return hosts;
}

function coversHosts(leaf: X509Certificate, hosts: string[]): boolean {
  const san = leaf.subjectAltName ?? "";
  return hosts.every((h) => {
    if (isIP(h)) return leaf.checkIP(h) !== undefined;
    return san.split(", ").includes(`DNS:${h}`);
  });
}

// a reused certificate must stay valid at least this long
const MIN_REMAINING_MS = DAY_MS;

/**
 * Return the self-signed serving certificate in `certDir`, making one when there is none, it
 * does not parse, its key does not match, it expires within a day, or it lacks one of the
 * requested names.
 *
 * @example
 * ```ts
 * const serving = await ensureSelfSignedCertificate({ certDir: "apiserver.local.config/certificates" });
 * ```
 */
export async function ensureSelfSignedCertificate(
  options: SelfSignedOptions,
): Promise<StoredCertificate> {
  const now = options.now ?? Date.now();
  const certFile = join(options.certDir, "apiserver.crt");
  const keyFile = join(options.certDir, "apiserver.key");
  const hosts = selfSignedHosts(options.extraHosts);
  try {
    const existing = {
      cert: await readFile(certFile, "utf8"),
      key: await readFile(keyFile, "utf8"),
    };
    const leaf = checkServingCertificate(existing, { source: certFile, now });
    if (Date.parse(leaf.validTo) - now > MIN_REMAINING_MS && coversHosts(leaf, hosts)) {
      return { ...existing, certFile, keyFile, generated: false };
    }
  } catch {
    // missing or unusable: make a new one below
  }
  const { createCertificate } = await import("./cert_issue.ts");
  const pair = createCertificate({
    commonName: "localhost",
    hosts,
    extendedKeyUsages: ["serverAuth"],
    now,
    notAfter: now + (options.validDays ?? 365) * DAY_MS,
  });
  await mkdir(options.certDir, { recursive: true });
  await writeAtomically(keyFile, pair.key, 0o600);
  await writeAtomically(certFile, pair.cert, 0o644);
  return { ...pair, certFile, keyFile, generated: true };
}

async function writeAtomically(path: string, content: string, mode: number): Promise<void> {
  const tmp = `${path}.tmp-${randomBytes(4).toString("hex")}`;
  await writeFile(tmp, content, { mode });
  await rename(tmp, path);
}
