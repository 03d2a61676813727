/**
 * The temporary credentials of an AWS role that a KEDA trigger names (`awsRoleArn`, or
 * `podIdentity.roleArn`), assumed with STS as KEDA v2.20.2 does (`pkg/scalers/aws/aws_common.go`,
 * `aws_config_cache.go`, with the Go SDK's `stscreds` defaults): by the adapter's own default
 * credential chain (environment, IRSA web identity, container or instance role), for 900 s, under
 * the session name `KEDA` for a pod identity's role (shared by every trigger of the same role,
 * external id and region) and the SDK's `aws-go-sdk-<unix nanoseconds>` for the deprecated
 * `awsRoleArn` of a pod-owned identity (one per trigger). With `AWS_WEB_IDENTITY_TOKEN_FILE` set,
 * a pod identity's role is first asked for with the adapter's web identity token
 * (AssumeRoleWithWebIdentity), and assumed with AssumeRole only when STS refuses that.
 *
 * Credentials are kept and assumed again {@linkcode REFRESH_BEFORE_EXPIRY_MS} before they expire
 * (the JavaScript SDK's own margin); the time is passed in.
 */
import { readFile } from "node:fs/promises";

/** The Go SDK's `stscreds.DefaultDuration` (15 minutes), which KEDA does not change. */
export const ASSUME_ROLE_DURATION_SECONDS = 900;
/** The session name KEDA sets for a pod identity's role. */
export const KEDA_ROLE_SESSION_NAME = "KEDA";
/** Credentials this close to their expiration are assumed again (the JS SDK's `EXPIRATION_MS`). */
export const REFRESH_BEFORE_EXPIRY_MS = 300_000;

/** Temporary credentials, as STS answers them. */
export interface AwsTemporaryCredentials {
  accessKeyId: string;
  secretAccessKey: string;
  sessionToken: string;
  /** Ms since the epoch. */
  expiration: number;
}

/** Options of {@linkcode AwsRoles}. */
export interface AwsRolesOptions {
  /** STS: an endpoint for every request (tests, a private endpoint); else the region's. */
  stsEndpointUrl?: string | null;
  /** STS: extra client configuration (tests: the credentials of the assuming identity). */
  stsClientConfig?: Record<string, unknown>;
  /** KEDA's `AWS_WEB_IDENTITY_TOKEN_FILE`: tried first for a pod identity's role. */
  webIdentityTokenFile?: string | null;
}

type StsSdk = typeof import("@aws-sdk/client-sts");
let stsSdk: Promise<StsSdk> | null = null;

/** One role's credentials: assumed on first use, again when they near their expiration. */
export class AssumedRole {
  readonly roleArn: string;
  readonly #assume: (now: number) => Promise<AwsTemporaryCredentials>;
  #current: AwsTemporaryCredentials | null = null;
  #pending: Promise<AwsTemporaryCredentials> | null = null;
  constructor(roleArn: string, assume: (now: number) => Promise<AwsTemporaryCredentials>) {
    this.roleArn = roleArn;
    this.#assume = assume;
  }
  /** Valid credentials at `now` (one STS request at a time, shared by concurrent callers). */
  get(now: number): Promise<AwsTemporaryCredentials> {
    const c = this.#current;
    if (c !== null && now < c.expiration - REFRESH_BEFORE_EXPIRY_MS) return Promise.resolve(c);
    this.#pending ??= this.#assume(now).then((fresh) => {
      this.#current = fresh;
      return fresh;
    }).finally(() => {
      this.#pending = null;
    });
    return this.#pending;
  }
}

/**
 * The roles the AWS triggers assume: KEDA's shared cache of a pod identity's roles, keyed by
 * role, external id and region, and the STS clients (one per region).
 */
export class AwsRoles {
  readonly #options: AwsRolesOptions;
  readonly #shared = new Map<string, AssumedRole>();
  readonly #clients = new Map<string, Promise<{ sdk: StsSdk; client: unknown }>>();
  constructor(options: AwsRolesOptions = {}) {
    this.#options = options;
  }

  /** How many shared roles are kept (tests). */
  get size(): number {
    return this.#shared.size;
  }

  /** A pod identity's role (`podIdentity.provider: aws`): one per role, external id and region. */
  shared(roleArn: string, externalId: string, region: string): AssumedRole {
    const key = JSON.stringify([roleArn, externalId, region]);
    let role = this.#shared.get(key);
    if (role === undefined) {
      let webIdentity: boolean | null = this.#options.webIdentityTokenFile ? null : false;
      role = new AssumedRole(roleArn, async (now) => {
        // KEDA decides once, when the entry is made: web identity if it works, else AssumeRole
        if (webIdentity !== false) {
          try {
            const c = await this.#assumeWithWebIdentity(roleArn, region, now);
            webIdentity = true;
            return c;
          } catch (e) {
            if (webIdentity === true) throw e;
            webIdentity = false;
          }
        }
        return await this.#assumeRole(roleArn, externalId, KEDA_ROLE_SESSION_NAME, region, now);
      });
      this.#shared.set(key, role);
    }
    return role;
  }

  /** The deprecated `awsRoleArn` of a pod-owned identity: a role of the trigger's own. */
  own(roleArn: string, region: string): AssumedRole {
    let session = "";
    return new AssumedRole(roleArn, (now) => {
      // the Go SDK names the session once, at its first request, in nanoseconds
      session ||= `aws-go-sdk-${BigInt(Math.trunc(now)) * 1_000_000n}`;
      return this.#assumeRole(roleArn, "", session, region, now);
    });
  }

  #client(region: string): Promise<{ sdk: StsSdk; client: unknown }> {
    let c = this.#clients.get(region);
    if (c === undefined) {
      c = (stsSdk ??= import("@aws-sdk/client-sts")).then((sdk) => {
        const endpoint = this.#options.stsEndpointUrl || undefined;
        return {
          sdk,
          client: new sdk.STSClient({
            ...(this.#options.stsClientConfig ?? {}),
            region,
            ...(endpoint ? { endpoint } : {}),
          }),
        };
      });
      this.#clients.set(region, c);
    }
    return c;
  }

  async #assumeRole(
    roleArn: string,
    externalId: string,
    sessionName: string,
    region: string,
    now: number,
  ): Promise<AwsTemporaryCredentials> {
    const { sdk, client } = await this.#client(region);
    try {
      const out = await (client as InstanceType<StsSdk["STSClient"]>).send(
        new sdk.AssumeRoleCommand({
          RoleArn: roleArn,
          RoleSessionName: sessionName,
          DurationSeconds: ASSUME_ROLE_DURATION_SECONDS,
          ...(externalId !== "" ? { ExternalId: externalId } : {}),
        }),
      );
      return temporary(out.Credentials, roleArn, now);
    } catch (e) {
      throw stsError("AssumeRole", roleArn, e);
    }
  }

  async #assumeWithWebIdentity(
    roleArn: string,
    region: string,
    now: number,
  ): Promise<AwsTemporaryCredentials> {
    const file = this.#options.webIdentityTokenFile ?? "";
    const { sdk, client } = await this.#client(region);
    try {
      const token = (await readFile(file, "utf8")).trim();
      const out = await (client as InstanceType<StsSdk["STSClient"]>).send(
        new sdk.AssumeRoleWithWebIdentityCommand({
          RoleArn: roleArn,
          RoleSessionName: KEDA_ROLE_SESSION_NAME,
          WebIdentityToken: token,
        }),
        { abortSignal: AbortSignal.timeout(5000) },
      );
      return temporary(out.Credentials, roleArn, now);
    } catch (e) {
      throw stsError("AssumeRoleWithWebIdentity", roleArn, e);
    }
  }

  /** Stop the STS clients. */
  async destroy(): Promise<void> {
    for (const c of this.#clients.values()) {
      const { client } = await c.catch(() => ({ client: null }));
      (client as { destroy?: () => void } | null)?.destroy?.();
    }
    this.#clients.clear();
  }
}

function temporary(
  c: {
    AccessKeyId?: string;
    SecretAccessKey?: string;
    SessionToken?: string;
    Expiration?: Date;
  } | undefined,
  roleArn: string,
  now: number,
): AwsTemporaryCredentials {
  if (!c?.AccessKeyId || !c.SecretAccessKey || !c.SessionToken) {
    throw new Error(`STS answered no credentials for role ${roleArn}`);
  }
  const expiration = c.Expiration?.getTime();
  return {
    accessKeyId: c.AccessKeyId,
    secretAccessKey: c.SecretAccessKey,
    sessionToken: c.SessionToken,
    // without an expiration, assume again when the requested duration has passed
    expiration: expiration !== undefined && Number.isFinite(expiration)
      ? expiration
      : now + ASSUME_ROLE_DURATION_SECONDS * 1000,
  };
}

/** The Go SDK's wording (`operation error STS: AssumeRole, ... api error CODE: MESSAGE`). */
function stsError(operation: string, roleArn: string, e: unknown): Error {
  const err = e as { name?: string; message?: string; $metadata?: { httpStatusCode?: number } };
  const status = err.$metadata?.httpStatusCode;
  const code = err.name && err.name !== "Error" ? `api error ${err.name}: ` : "";
  return new Error(
    `failed to refresh cached credentials, operation error STS: ${operation}, role ${roleArn}${
      status !== undefined ? `, StatusCode: ${status}` : ""
    }, ${code}${err.message ?? String(e)}`,
  );
}
