/**
 * The name, summary and usage of the commands that `commands.ts` loads on demand (`plan`,
 * `explain`, `schedule`): `help` and usage errors need them without loading the command, and
 * `serve` never loads those commands' code.
 */

/** What `help` says of a command. */
export interface CommandInfo {
  name: string;
  summary: string;
  usage: string;
}

/** `plan`. */
export const PLAN_INFO: CommandInfo = {
  name: "plan",
  summary: "show how the metrics of HPA manifests would be collected, or what to fix",
  usage: "hpa-metrics-adapter plan -f FILE|DIR... [--output table|json] [--strict] [serve's flags]",
};

const EXPLAIN_USAGE = [
  "hpa-metrics-adapter explain NAMESPACE/NAME [--kubeconfig FILE] [--service-namespace NS]",
  "       [--service-name NAME] [--service-port PORT] [--service-scheme http|https]",
  "       hpa-metrics-adapter explain NAMESPACE/NAME --status-url http://HOST:PORT",
  "       hpa-metrics-adapter explain NAMESPACE/NAME -f FILE|DIR... [serve's flags]",
].join("\n");

/** `explain`. */
export const EXPLAIN_INFO: CommandInfo = {
  name: "explain",
  summary:
    "the facts of one HPA: each metric's collector, state, value and error, and its replicas",
  usage: EXPLAIN_USAGE,
};

const SCHEDULE_USAGE = [
  "schedule value -f FILE [--name NAME] --at RFC3339 [--scaling-window DURATION]",
  "               [--ramp-steps N] [--default-time-zone TZ]",
  "schedule preview -f FILE [--name NAME] [--from RFC3339] [--to RFC3339] [--step DURATION]",
  "                 [--scaling-window DURATION] [--ramp-steps N] [--default-time-zone TZ]",
  "",
  "FILE is a YAML or JSON manifest (or a folder of them) holding ScalingSchedule or",
  "ClusterScalingSchedule objects; --name (NAME or NAMESPACE/NAME) picks one when there are",
  "several. preview defaults: --from now rounded down to the hour, --to 24h later, --step 15m.",
].join("\n");

/** `schedule`. */
export const SCHEDULE_INFO: CommandInfo = {
  name: "schedule",
  summary: "evaluate a ScalingSchedule from manifests: its value at a time, or a preview",
  usage: SCHEDULE_USAGE,
};
