/**
 * External metrics of type `sqs-queue-length`: the approximate number of messages in an AWS SQS
 * queue, read with `@aws-sdk/client-sqs` (`--aws-external-metrics`).
 *
 * Config keys (selector labels, read with the schema of src/core/kube_metrics_adapter/configs/sqs.ts): `queue-name`
 * and `region` (required; the region must be one of the operator's, `--aws-region`), and the
 * optional `include-in-flight: "true"` (adds `ApproximateNumberOfMessagesNotVisible`, received
 * but not yet deleted) and `include-delayed: "true"` (adds `ApproximateNumberOfMessagesDelayed`).
 *
 * One `SQSClient` per region, credentials from the SDK's default chain; `--aws-endpoint-url`
 * (else the SDK's own `AWS_ENDPOINT_URL_SQS` / `AWS_ENDPOINT_URL`) points it at an emulator or a
 * VPC endpoint, for every request (the SDK would otherwise send requests to the host named in the
 * queue URL). The queue URL is resolved with GetQueueUrl on the first collection and again after
 * a "queue does not exist" error (the queue may have been re-created); every collection calls
 * GetQueueAttributes. kube-metrics-adapter resolved the URL once, when the HPA was first seen, and
 * never again.
 *
 * The SDK is loaded on the first collection, not at start: most installations never use it, and
 * loading it costs several MiB of memory.
 *
 * @module
 */
import type { QueueAttributeName, SQSClient, SQSClientConfig } from "@aws-sdk/client-sqs";
import { sqsDescriptor, type SqsQueueConfig } from "../core/kube_metrics_adapter/configs/sqs.ts";
import { BackendNotConfiguredError, planConfig } from "./types.ts";
import type {
  CollectContext,
  Collector,
  CollectorFactory,
  CollectorFactoryOptions,
  CollectResult,
} from "./types.ts";

export type { SqsQueueConfig };

/** How the SQS collector reaches SQS (what `--aws-region` and `--aws-endpoint-url` set). */
export interface SqsFactoryOptions {
  /** The regions metrics may name; none by default (then every SQS metric is refused). */
  regions?: readonly string[];
  /**
   * The SQS endpoint for every request (an emulator, a VPC endpoint); unset or empty: the
   * SDK's own choice (`AWS_ENDPOINT_URL_SQS`, `AWS_ENDPOINT_URL`, else the region's).
   */
  endpointUrl?: string | null;
  /** Extra client configuration (tests: credentials, retries); endpoint and region are set. */
  clientConfig?: Partial<SQSClientConfig>;
}

function isQueueMissing(e: unknown): boolean {
  const err = e as { name?: string; Code?: string; message?: string };
  return err?.name === "QueueDoesNotExist" ||
    err?.name === "AWS.SimpleQueueService.NonExistentQueue" ||
    err?.Code === "AWS.SimpleQueueService.NonExistentQueue";
}

function describe(e: unknown): string {
  const err = e as { name?: string; message?: string };
  const msg = (err?.message ?? String(e)).replace(/\s+/g, " ").slice(0, 200);
  return err?.name && err.name !== "Error" ? `${err.name}: ${msg}` : msg;
}

type SqsSdk = typeof import("@aws-sdk/client-sqs");
let sdk: Promise<SqsSdk> | null = null;

/** The AWS SDK's SQS client module, loaded once on first use. */
function loadSdk(): Promise<SqsSdk> {
  return sdk ??= import("@aws-sdk/client-sqs");
}

/** An SQS client and the SDK module its commands come from. */
interface SqsConnection {
  sdk: SqsSdk;
  client: SQSClient;
}

class SqsQueueLengthCollector implements Collector {
  readonly queryKey: string;
  readonly #config: SqsQueueConfig;
  readonly #connect: () => Promise<SqsConnection>;
  readonly #metric: string;
  #queueUrl: string | null = null;

  constructor(
    config: SqsQueueConfig,
    options: { connect: () => Promise<SqsConnection>; metric: string; endpoint: string | null },
  ) {
    this.#config = config;
    this.#connect = options.connect;
    this.#metric = options.metric;
    this.queryKey = `sqs-queue-length/External|${
      options.endpoint ?? ""
    }|${config.region}|${config.queueName}|${config.includeInFlight ? "in-flight" : ""}|${
      config.includeDelayed ? "delayed" : ""
    }`;
  }

  async #resolve(ctx: CollectContext): Promise<string> {
    const { queueName, region } = this.#config;
    try {
      const { sdk, client } = await this.#connect();
      const out = await client.send(new sdk.GetQueueUrlCommand({ QueueName: queueName }), {
        abortSignal: ctx.signal,
      });
      if (!out.QueueUrl) throw new Error("no QueueUrl in the answer");
      this.#queueUrl = out.QueueUrl;
      return out.QueueUrl;
    } catch (e) {
      if (isQueueMissing(e)) {
        throw new Error(`sqs queue "${queueName}" does not exist in region ${region}`);
      }
      throw new Error(
        `failed to get the URL of sqs queue "${queueName}" in region ${region}: ${
          this.#abortText(ctx) ?? describe(e)
        }`,
      );
    }
  }

  #abortText(ctx: CollectContext): string | null {
    if (!ctx.signal.aborted) return null;
    const r = ctx.signal.reason;
    if (r instanceof Error) return r.name === "TimeoutError" ? "timed out" : r.message;
    return typeof r === "string" ? r : "aborted";
  }

  async collect(ctx: CollectContext): Promise<CollectResult> {
    const { queueName, region } = this.#config;
    const names: QueueAttributeName[] = ["ApproximateNumberOfMessages"];
    if (this.#config.includeInFlight) names.push("ApproximateNumberOfMessagesNotVisible");
    if (this.#config.includeDelayed) names.push("ApproximateNumberOfMessagesDelayed");
    let attributes: Record<string, string> | undefined;
    for (let attempt = 0;; attempt++) {
      const url = this.#queueUrl ?? await this.#resolve(ctx);
      try {
        const { sdk, client } = await this.#connect();
        const out = await client.send(
          new sdk.GetQueueAttributesCommand({ QueueUrl: url, AttributeNames: names }),
          { abortSignal: ctx.signal },
        );
        attributes = out.Attributes ?? {};
        break;
      } catch (e) {
        if (isQueueMissing(e) && attempt === 0) {
          // Deleted, maybe re-created under a new URL: resolve once more.
          this.#queueUrl = null;
          continue;
        }
        if (isQueueMissing(e)) this.#queueUrl = null;
        throw new Error(
          `failed to get the length of sqs queue "${queueName}" in region ${region}: ${
            this.#abortText(ctx) ?? describe(e)
          }`,
        );
      }
    }
    let value = 0;
    for (const name of names) {
      const raw = attributes[name];
      if (raw === undefined || !/^\d+$/.test(raw)) {
        throw new Error(
          `sqs queue "${queueName}" in region ${region} answered ${name}=${
            raw === undefined ? "nothing" : `"${raw}"`
          } for metric ${this.#metric}`,
        );
      }
      value += Number(raw);
    }
    return { samples: [{ value, timestamp: ctx.now() }] };
  }
}

/**
 * A factory of SQS collectors with its own client per region (made on first use, kept for the
 * factory's lifetime). A metric's region must be one of `options.regions`.
 *
 * @example
 * ```ts
 * const factory = createSqsQueueLengthFactory({ regions: ["eu-central-1"] });
 * factory.create({ plan }); // throws for a region other than eu-central-1
 * ```
 */
export function createSqsQueueLengthFactory(options: SqsFactoryOptions = {}): CollectorFactory {
  const regions = [...(options.regions ?? [])];
  const endpoint = options.endpointUrl ? options.endpointUrl : null;
  const clients = new Map<string, SQSClient>();
  const connect = async (region: string): Promise<SqsConnection> => {
    const sdk = await loadSdk();
    let c = clients.get(region);
    if (!c) {
      c = new sdk.SQSClient({
        // Requests go to the configured (or the region's) endpoint, not to the host in the
        // queue URL: an emulator's or a VPC endpoint's queue URLs name hosts that may not resolve.
        useQueueUrlAsEndpoint: false,
        ...options.clientConfig,
        region,
        ...(endpoint ? { endpoint } : {}),
      });
      clients.set(region, c);
    }
    return { sdk, client: c };
  };
  return {
    type: "sqs-queue-length",
    metricTypes: ["External"],
    create({ plan }: CollectorFactoryOptions): Collector {
      const config = planConfig(sqsDescriptor, plan, {});
      if (!regions.includes(config.region)) {
        throw new BackendNotConfiguredError(
          `region "${config.region}" of metric ${plan.metricName} is not configured: want one of --aws-region (${
            regions.length ? regions.join(", ") : "none given"
          })`,
        );
      }
      if (endpoint !== null) {
        try {
          new URL(endpoint);
        } catch {
          throw new Error(`invalid --aws-endpoint-url "${endpoint}"`);
        }
      }
      return new SqsQueueLengthCollector(config, {
        connect: () => connect(config.region),
        metric: plan.metricName,
        endpoint,
      });
    },
  };
}
