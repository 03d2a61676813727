/**
 * `--shard-collection` (issue 29) put together from the flags: membership through Leases
 * (cluster/shard_membership.ts), ownership by rendezvous hashing (core/shard.ts), and the push
 * of new values to the peers (engine/shard_replication.ts) over HTTPS, verified with
 * `--shard-peer-ca-file` and authenticated with the adapter's own Kubernetes credentials (its
 * service account token), which the receiving replica checks like any request: TokenReview,
 * then a SubjectAccessReview for the non-resource `post` of `/shard/v1/samples`.
 *
 * Loaded only when the flag is on (serve.ts imports it dynamically).
 */
import { readFileSync } from "node:fs";
import { SHARD_SAMPLES_PATH } from "../api/app.ts";
import type { KubeClusterSource } from "../cluster/kube_source.ts";
import { ShardMembership } from "../cluster/shard_membership.ts";
import { type ShardMember, ShardRing } from "../core/shard.ts";
import type { Engine, EngineStore } from "../engine/engine.ts";
import type { Logger } from "../engine/logger.ts";
import { type PeerRecordSink, ShardReplicator } from "../engine/shard_replication.ts";
import { createTlsFetch, type TlsFetch } from "../runtime/tls_fetch.ts";
import { UsageError } from "./command.ts";
import { type FlagValues, numberFlag, stringFlag } from "./flags.ts";

/** Sharding as serve uses it. */
export interface Sharding {
  identity: string;
  /** Whether this replica collects the query (the engine's `owns`). */
  owns(queryKey: string): boolean;
  /** The store the engine writes through (writes also go to the peers). */
  wrap(store: EngineStore): EngineStore;
  /** Applies a peer's push through `apply` (the app's `shardSamples`). */
  receive(body: unknown, apply: PeerRecordSink): string | null;
  /**
   * Learns the members once (before the engine starts), then follows them; withdraws, from
   * `store` (the one without the push), values no replica refreshed in time.
   */
  start(engine: Engine, store: Pick<EngineStore, "recordSuccess" | "recordFailure">): Promise<void>;
  stop(): Promise<void>;
  members(): ShardMember[];
  replicator: ShardReplicator;
}

/** Reads the shard flags; throws a UsageError for what cannot work. */
export function shardingFromFlags(
  flags: FlagValues,
  ctx: {
    kubeSource: KubeClusterSource | null;
    env: Record<string, string | undefined>;
    identity: string;
    namespace: string;
    securePort: number;
    log: Logger;
  },
): Sharding {
  if (ctx.kubeSource === null) {
    throw new UsageError(
      "--shard-collection needs a cluster (the replicas meet through Leases); it cannot be used with --manifests",
    );
  }
  const caFile = stringFlag(flags, "shard-peer-ca-file");
  if (caFile === null) {
    throw new UsageError(
      "--shard-collection needs --shard-peer-ca-file: the CA that verifies the peers' serving certificates (the replicas send them their credentials)",
    );
  }
  let ca: string;
  try {
    ca = readFileSync(caFile, "utf8");
  } catch (e) {
    throw new UsageError(`--shard-peer-ca-file ${caFile}: ${(e as Error).message}`);
  }
  const address = advertiseAddress(
    stringFlag(flags, "shard-advertise-address"),
    ctx.env.POD_IP,
    ctx.securePort,
  );
  const serverName = stringFlag(flags, "shard-peer-server-name") ?? undefined;
  const kubeSource = ctx.kubeSource;
  const self: ShardMember = { identity: ctx.identity, address };
  let ring = new ShardRing([ctx.identity]);
  let engineRef: Engine | null = null;
  let withdrawTimer: ReturnType<typeof setInterval> | null = null;

  // one TLS client per client certificate (a kubeconfig may carry one; tokens go in headers)
  let client: { key: string; fetch: TlsFetch } | null = null;
  const send = async (peer: ShardMember, body: string): Promise<void> => {
    const creds = await kubeSource.kubeConfig.credentials();
    const key = `${creds.tls.cert ?? ""}\n${creds.tls.key ?? ""}`;
    if (client === null || client.key !== key) {
      await client?.fetch.close();
      client = {
        key,
        fetch: createTlsFetch({
          ca,
          ...(serverName ? { serverName } : {}),
          ...(creds.tls.cert ? { cert: creds.tls.cert, key: creds.tls.key } : {}),
        }),
      };
    }
    const res = await client.fetch.fetch(`${peer.address}${SHARD_SAMPLES_PATH}`, {
      method: "POST",
      headers: { ...creds.headers, "Content-Type": "application/json" },
      body,
      signal: AbortSignal.timeout(10_000),
    });
    const text = await res.text();
    if (!res.ok) throw new Error(`HTTP ${res.status}: ${text.slice(0, 300)}`);
  };
  const replicator = new ShardReplicator({ identity: ctx.identity, send, logger: ctx.log });
  const membership = new ShardMembership({
    http: kubeSource.http,
    namespace: ctx.namespace,
    group: stringFlag(flags, "leader-elect-resource-name") ?? "hpa-metrics-adapter",
    self,
    leaseDurationSeconds: numberFlag(flags, "shard-lease-duration"),
    retryPeriodSeconds: numberFlag(flags, "shard-retry-period"),
    onChange: (members) => {
      ring = new ShardRing(members.map((m) => m.identity));
      replicator.setMembers(members);
      const started = engineRef?.reshard() ?? 0;
      const share = engineRef?.shardShare();
      ctx.log.info("shard share", {
        members: members.length,
        ...(share ? { owned: share.owned, of: share.total } : {}),
        started,
      });
    },
    logger: (level, message) =>
      level === "debug" ? ctx.log.debug(2, message) : ctx.log[level](message),
  });
  return {
    identity: ctx.identity,
    owns: (queryKey) => ring.owns(ctx.identity, queryKey),
    wrap: (store) => replicator.wrap(store),
    receive: (body, apply) => replicator.receive(body, apply),
    async start(engine, store): Promise<void> {
      engineRef = engine;
      await membership.step();
      membership.start();
      const leaseMs = numberFlag(flags, "shard-lease-duration") * 1000;
      withdrawTimer = setInterval(
        () => engine.withdrawUnheard(store, leaseMs),
        numberFlag(flags, "shard-retry-period") * 1000,
      );
    },
    async stop(): Promise<void> {
      if (withdrawTimer !== null) clearInterval(withdrawTimer);
      await membership.stop();
      await replicator.flush();
      replicator.close();
      await (client as { fetch: TlsFetch } | null)?.fetch.close();
    },
    members: () => membership.members(),
    replicator,
  };
}

/** The URL peers push to: the flag, else `https://$POD_IP:<port>`. */
export function advertiseAddress(
  flag: string | null,
  podIp: string | undefined,
  securePort: number,
): string {
  if (flag !== null) {
    const url = flag.includes("://") ? flag : `https://${flag}`;
    let parsed: URL;
    try {
      parsed = new URL(url);
    } catch {
      throw new UsageError(`--shard-advertise-address ${JSON.stringify(flag)} is not a URL`);
    }
    if (parsed.protocol !== "https:") {
      throw new UsageError(`--shard-advertise-address ${JSON.stringify(flag)} must be https`);
    }
    return url.replace(/\/+$/, "");
  }
  if (!podIp) {
    throw new UsageError(
      "--shard-collection needs the address peers reach this replica at: set POD_IP (the downward API's status.podIP) or --shard-advertise-address",
    );
  }
  const host = podIp.includes(":") ? `[${podIp}]` : podIp;
  return `https://${host}:${securePort}`;
}
