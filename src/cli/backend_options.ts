/**
 * The typed options of the InfluxDB, SQS, ZMON and Nakadi collectors, read from the serve
 * flags: the one place that knows how those flags are spelled.
 */
import type { InfluxDbOptions } from "../collectors/influxdb.ts";
import type { NakadiOptions } from "../collectors/nakadi.ts";
import type { SqsFactoryOptions } from "../collectors/sqs.ts";
import type { ZmonOptions } from "../collectors/zmon.ts";
import { boolFlag, type FlagValues, listFlag, stringFlag } from "./flags.ts";

/** `--max-response-bytes`, or undefined (the collector's default) when unset or not positive. */
function maxResponseBytes(flags: FlagValues): number | undefined {
  const v = flags["max-response-bytes"];
  return typeof v === "number" && v > 0 ? v : undefined;
}

/** The InfluxDB collector's options: `--influxdb-address`, `-token`, `-org` and the guards. */
export function influxDbOptions(flags: FlagValues): InfluxDbOptions {
  return {
    address: stringFlag(flags, "influxdb-address"),
    token: stringFlag(flags, "influxdb-token"),
    org: stringFlag(flags, "influxdb-org"),
    allowAnnotationTokens: boolFlag(flags, "allow-annotation-tokens"),
    allowLinkLocalTargets: boolFlag(flags, "allow-link-local-targets"),
    maxResponseBytes: maxResponseBytes(flags),
  };
}

/** The SQS collector's options: `--aws-region` and `--aws-endpoint-url`. */
export function sqsOptions(flags: FlagValues): SqsFactoryOptions {
  return {
    regions: listFlag(flags, "aws-region"),
    endpointUrl: stringFlag(flags, "aws-endpoint-url"),
  };
}

/** The ZMON collector's options: `--zmon-kariosdb-endpoint`, `--zmon-token-name`, the token. */
export function zmonOptions(flags: FlagValues): ZmonOptions {
  return {
    endpoint: stringFlag(flags, "zmon-kariosdb-endpoint"),
    token: stringFlag(flags, "token"),
    credentialsDir: stringFlag(flags, "credentials-dir"),
    tokenName: stringFlag(flags, "zmon-token-name"),
    maxResponseBytes: maxResponseBytes(flags),
  };
}

/** The Nakadi collector's options: `--nakadi-endpoint`, `--nakadi-token-name`, the token. */
export function nakadiOptions(flags: FlagValues): NakadiOptions {
  return {
    endpoint: stringFlag(flags, "nakadi-endpoint"),
    token: stringFlag(flags, "token"),
    credentialsDir: stringFlag(flags, "credentials-dir"),
    tokenName: stringFlag(flags, "nakadi-token-name"),
    maxResponseBytes: maxResponseBytes(flags),
  };
}
