/**
 * The authentication material in force: the client CA and the front-proxy (requestheader)
 * settings, given as options or read from the `kube-system/extension-apiserver-authentication`
 * ConfigMap (options win), and that config parsed for the request paths.
 *
 * @module
 */
import { parseBundle, type ParsedBundle } from "./client_cert.ts";
import {
  type IdentityHeaders,
  identityHeadersOf,
  type RequestHeaderConfig,
} from "./front_proxy.ts";
import { asRecord } from "./kube_request.ts";

/** The authentication material in force. */
export interface AuthenticationConfig {
  /** CA bundle (PEM) for client-certificate users; "" for none. */
  clientCa: string;
  /** Front-proxy settings, or null for none. */
  requestHeader: RequestHeaderConfig | null;
}

/** The parts of the config given as options; each replaces its part of the ConfigMap's. */
export interface GivenAuthenticationConfig {
  clientCa?: string | null;
  requestHeader?: RequestHeaderConfig | null;
}

/** Where the ConfigMap is read (GET). */
export const CONFIGMAP_PATH =
  "/api/v1/namespaces/kube-system/configmaps/extension-apiserver-authentication";

function jsonStrings(data: Record<string, string>, key: string): string[] {
  const raw = data[key];
  if (raw === undefined || raw === "") return [];
  let parsed: unknown;
  try {
    parsed = JSON.parse(raw);
  } catch {
    throw new Error(`invalid JSON in key "${key}" of configmap extension-apiserver-authentication`);
  }
  if (!Array.isArray(parsed) || parsed.some((v) => typeof v !== "string")) {
    throw new Error(
      `key "${key}" of configmap extension-apiserver-authentication is not a list of strings`,
    );
  }
  return parsed as string[];
}

/**
 * Reads the authentication config out of the `extension-apiserver-authentication` ConfigMap's
 * data. Options win: a `clientCa` or `requestHeader` given in `given` replaces its part.
 */
export function configFromConfigMap(
  data: Record<string, string>,
  given: GivenAuthenticationConfig = {},
): AuthenticationConfig {
  let requestHeader: RequestHeaderConfig | null = given.requestHeader ?? null;
  if (!requestHeader && data["requestheader-client-ca-file"]) {
    requestHeader = {
      clientCa: data["requestheader-client-ca-file"],
      allowedNames: jsonStrings(data, "requestheader-allowed-names"),
      usernameHeaders: jsonStrings(data, "requestheader-username-headers"),
      uidHeaders: jsonStrings(data, "requestheader-uid-headers"),
      groupHeaders: jsonStrings(data, "requestheader-group-headers"),
      extraHeaderPrefixes: jsonStrings(data, "requestheader-extra-headers-prefix"),
    };
  }
  return { clientCa: given.clientCa || data["client-ca-file"] || "", requestHeader };
}

/**
 * The config of the API's answer to a GET of {@linkcode CONFIGMAP_PATH}: a missing ConfigMap
 * is an empty one; any other status than 200 throws.
 */
export function configFromConfigMapResponse(
  res: { status: number; body: unknown },
  given: GivenAuthenticationConfig,
): AuthenticationConfig {
  if (res.status === 404) return configFromConfigMap({}, given);
  if (res.status !== 200) {
    const message = asRecord(res.body).message;
    throw new Error(
      `reading configmap kube-system/extension-apiserver-authentication: status ${res.status}${
        message ? `: ${message}` : ""
      }`,
    );
  }
  return configFromConfigMap(asRecord(asRecord(res.body).data), given);
}

/** The config in force, parsed once for every request. */
export interface ActiveConfig {
  config: AuthenticationConfig;
  clientCa: ParsedBundle | null;
  requestHeaderCa: ParsedBundle | null;
  bundle: string;
  /** The front proxy's identity header names, lower-cased (null without a requestheader CA). */
  identityHeaders: IdentityHeaders | null;
}

/** The config in force, as the request paths read it: `active` is replaced whole on a change. */
export interface ActiveConfigRef {
  active: ActiveConfig;
}

/** Parse `config` for use. Throws when a CA bundle does not parse. */
export function activate(config: AuthenticationConfig): ActiveConfig {
  const clientCa = parseBundle(config.clientCa, "the client CA bundle");
  const rh = config.requestHeader;
  const requestHeaderCa = rh ? parseBundle(rh.clientCa, "the requestheader CA bundle") : null;
  const pems = [clientCa?.pem, requestHeaderCa?.pem].filter((p): p is string => !!p);
  const bundle = pems.map((p) => p.trim()).join("\n") + (pems.length ? "\n" : "");
  const identityHeaders = rh && requestHeaderCa ? identityHeadersOf(rh) : null;
  return { config, clientCa, requestHeaderCa, bundle, identityHeaders };
}

/** Whether two configs are the same (a poll that changed nothing keeps the active one). */
export function sameConfig(a: AuthenticationConfig, b: AuthenticationConfig): boolean {
  return JSON.stringify(a) === JSON.stringify(b);
}

/** Local use: no CA and no cluster, so every request is allowed. */
export function isLocal(active: ActiveConfig, hasCluster: boolean): boolean {
  return !hasCluster && active.clientCa === null && active.requestHeaderCa === null;
}
