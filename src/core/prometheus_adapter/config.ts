/**
 * prometheus-adapter v0.12.0's config file (`--config`, pkg/config/config.go), read as the
 * adapter reads it: the three rule lists `rules`, `externalRules` and `resourceRules`, unknown
 * fields refused (it uses yaml.UnmarshalStrict), scalars read as strings where a string is
 * expected (as yaml.v2 does: `seriesQuery: 5` is "5"), and the checks that
 * pkg/naming's NamersFromConfig and pkg/resourceprovider make at start: regular expressions
 * (Go's RE2 syntax), templates (`<<` `>>`), `is` or `isNot` in a filter, and the default of
 * `name.as` (`$0` without a capture group, `$1` with one, required with more). Errors name
 * the rule and the field: `rules[2].name.matches: error parsing regexp: missing closing ): \`(\``.
 *
 * What depends on the cluster (resource names in `overrides`, resolved through the
 * RESTMapper) is checked by {@linkcode ResourceConverter} in naming.ts.
 *
 * The YAML itself is parsed by the caller: these functions take the parsed object.
 *
 * @module
 */

import { z } from "zod";
import { zodProblems } from "../kubernetes/hpa.ts";
import { compileGoRegexp, type GoRegexp } from "./regex.ts";
import { executeGoTemplate, type GoStruct, type GoTemplate, parseGoTemplate } from "./template.ts";

/** yaml.v2 decodes any scalar into a string field; null leaves it empty. */
const GoString = z.preprocess(
  (v) => v === null ? undefined : typeof v === "number" || typeof v === "boolean" ? String(v) : v,
  z.string().optional(),
);

const GroupResourceSchema = z.strictObject({
  group: GoString,
  resource: GoString,
});

const ResourceMappingSchema = z.strictObject({
  template: GoString,
  overrides: z.record(z.string(), GroupResourceSchema).nullish(),
  namespaced: z.boolean().nullish(),
});

const RegexFilterSchema = z.strictObject({ is: GoString, isNot: GoString });

const DiscoveryRuleSchema = z.strictObject({
  seriesQuery: GoString,
  seriesFilters: z.array(RegexFilterSchema).nullish(),
  resources: ResourceMappingSchema.nullish(),
  name: z.strictObject({ matches: GoString, as: GoString }).nullish(),
  metricsQuery: GoString,
});

const ResourceRuleSchema = z.strictObject({
  containerQuery: GoString,
  nodeQuery: GoString,
  resources: ResourceMappingSchema.nullish(),
  containerLabel: GoString,
});

const ConfigSchema = z.strictObject({
  rules: z.array(DiscoveryRuleSchema).nullish(),
  externalRules: z.array(DiscoveryRuleSchema).nullish(),
  resourceRules: z.strictObject({
    cpu: ResourceRuleSchema.nullish(),
    memory: ResourceRuleSchema.nullish(),
    window: z.preprocess((v) => (typeof v === "number" ? String(v) : v), z.string()).nullish(),
  }).nullish(),
});

/** A group-resource as written in `overrides` (not yet resolved against the cluster). */
export interface GroupResource {
  group: string;
  resource: string;
}

/** `resources`: how series labels map to Kubernetes objects. */
export interface ResourceMapping {
  /** `template`, as written ("" when absent). */
  template: string;
  /** The parsed template, when there is one. */
  labelTemplate: GoTemplate | null;
  /**
   * What reads a label back into a group-resource: the template run with Go's capture groups
   * as `.Group` and `.Resource`, anchored (upstream's labelGroupResExtractor).
   */
  labelPattern: { regexp: GoRegexp; groupIndex: number | null; resourceIndex: number } | null;
  /** `overrides`: label name to group-resource, in the file's order. */
  overrides: ReadonlyArray<readonly [label: string, GroupResource]>;
  /** `namespaced` (default true): whether external queries get the namespace matcher. */
  namespaced: boolean;
}

/** A regular expression filter on series names. */
export interface SeriesFilter {
  /** true for `is`, false for `isNot`. */
  is: boolean;
  regexp: GoRegexp;
}

/** One entry of `rules` or `externalRules`. */
export interface DiscoveryRule {
  /** Where it is in the file, for messages: `rules[2]`. */
  path: string;
  seriesQuery: string;
  /** `seriesFilters`, then `name.matches` as an `is` filter when given (as upstream adds it). */
  seriesFilters: readonly SeriesFilter[];
  resources: ResourceMapping;
  /** `name.matches` (`.*` when absent). */
  nameMatches: GoRegexp;
  /** `name.as`, or its default (`$0` / `$1`). */
  nameAs: string;
  /** `metricsQuery`, as written. */
  metricsQuery: string;
  metricsQueryTemplate: GoTemplate;
}

/** One of `resourceRules.cpu` / `.memory`. */
export interface ResourceRule {
  path: string;
  containerQuery: string;
  containerQueryTemplate: GoTemplate;
  nodeQuery: string;
  nodeQueryTemplate: GoTemplate;
  resources: ResourceMapping;
  containerLabel: string;
}

/** `resourceRules`. */
export interface ResourceRules {
  cpu: ResourceRule;
  memory: ResourceRule;
  /** `window` in seconds (0 when absent). */
  windowSeconds: number;
}

/** A whole config file. */
export interface PrometheusAdapterConfig {
  rules: readonly DiscoveryRule[];
  externalRules: readonly DiscoveryRule[];
  /** null when the file has no `resourceRules` (metrics.k8s.io is then not served upstream). */
  resourceRules: ResourceRules | null;
}

/** A config that cannot be used: every problem, one a line. */
export class PrometheusAdapterConfigError extends Error {
  readonly problems: readonly string[];
  constructor(problems: readonly string[]) {
    super(`invalid prometheus-adapter config: ${problems.join("; ")}`);
    this.problems = problems;
  }
}

const PROM_DURATION =
  /^(?:(\d+)y)?(?:(\d+)w)?(?:(\d+)d)?(?:(\d+)h)?(?:(\d+)m)?(?:(\d+)s)?(?:(\d+)ms)?$/;

/** A Prometheus duration (`5m`, `1h30m`, `0`), in seconds, as prometheus/common/model reads it. */
export function parsePrometheusDuration(s: string): number {
  if (s === "0") return 0;
  const m = PROM_DURATION.exec(s);
  if (s === "" || !m) throw new Error(`not a valid duration string: "${s}"`);
  const unit = [365 * 86400, 7 * 86400, 86400, 3600, 60, 1, 0.001];
  return m.slice(1).reduce((sum, v, i) => sum + (v ? Number(v) * unit[i] : 0), 0);
}

/** The struct a resource label template sees (k8s.io/apimachinery schema.GroupResource). */
export function groupResourceValue(group: string, resource: string): GoStruct {
  return {
    type: "schema.GroupResource",
    fields: new Map([["Group", group], ["Resource", resource]]),
  };
}

function compileRegexp(pattern: string, field: string, problems: string[]): GoRegexp | null {
  try {
    return compileGoRegexp(pattern);
  } catch (err) {
    problems.push(`${field}: ${(err as Error).message}`);
    return null;
  }
}

function compileTemplate(source: string, field: string, problems: string[]): GoTemplate | null {
  try {
    return parseGoTemplate(source);
  } catch (err) {
    problems.push(
      `${field}: invalid template ${JSON.stringify(source)}: ${(err as Error).message}`,
    );
    return null;
  }
}

type RawMapping = z.infer<typeof ResourceMappingSchema> | null | undefined;

function resourceMapping(raw: RawMapping, path: string, problems: string[]): ResourceMapping {
  const template = raw?.template ?? "";
  let labelTemplate: GoTemplate | null = null;
  let labelPattern: ResourceMapping["labelPattern"] = null;
  if (template !== "") {
    const field = `${path}.resources.template`;
    labelTemplate = compileTemplate(template, field, problems);
    if (labelTemplate) {
      // upstream reads labels back with the template run on Go capture groups
      try {
        const text = executeGoTemplate(
          labelTemplate,
          groupResourceValue("(?P<group>.+?)", "(?P<resource>.+?)"),
        );
        if (text === "") throw new Error("empty template");
        const regexp = compileGoRegexp(`^${text}$`);
        const groupIndex = regexp.groupNames.indexOf("group");
        const resourceIndex = regexp.groupNames.indexOf("resource");
        if (resourceIndex < 0) {
          problems.push(`${field}: must include at least <<.Resource>> in the label template`);
        } else {
          labelPattern = { regexp, groupIndex: groupIndex < 0 ? null : groupIndex, resourceIndex };
        }
      } catch (err) {
        problems.push(
          `${field}: unable to convert label template ${JSON.stringify(template)} to matcher: ${
            (err as Error).message
          }`,
        );
      }
    }
  }
  const overrides: Array<readonly [string, GroupResource]> = [];
  for (const [label, gr] of Object.entries(raw?.overrides ?? {})) {
    overrides.push([label, { group: gr.group ?? "", resource: gr.resource ?? "" }]);
  }
  return {
    template,
    labelTemplate,
    labelPattern,
    overrides,
    namespaced: raw?.namespaced ?? true,
  };
}

type RawRule = z.infer<typeof DiscoveryRuleSchema>;

function discoveryRule(raw: RawRule, path: string, problems: string[]): DiscoveryRule | null {
  const before = problems.length;
  const resources = resourceMapping(raw.resources, path, problems);
  const metricsQuery = raw.metricsQuery ?? "";
  const metricsQueryTemplate = compileTemplate(metricsQuery, `${path}.metricsQuery`, problems);
  const seriesFilters: SeriesFilter[] = [];
  (raw.seriesFilters ?? []).forEach((f, i) => {
    const field = `${path}.seriesFilters[${i}]`;
    const is = f.is ?? "";
    const isNot = f.isNot ?? "";
    if (is !== "" && isNot !== "") {
      problems.push(
        `${field}: cannot have both an "is" (${JSON.stringify(is)}) and "isNot" (${
          JSON.stringify(isNot)
        }) expression in a single filter`,
      );
      return;
    }
    if (is === "" && isNot === "") {
      problems.push(`${field}: must have either an "is" or "isNot" expression in a filter`);
      return;
    }
    const re = compileRegexp(is || isNot, `${field}.${is ? "is" : "isNot"}`, problems);
    if (re) seriesFilters.push({ is: is !== "", regexp: re });
  });
  const matches = raw.name?.matches ?? "";
  let nameMatches: GoRegexp | null;
  if (matches !== "") {
    nameMatches = compileRegexp(matches, `${path}.name.matches`, problems);
    if (nameMatches) seriesFilters.push({ is: true, regexp: nameMatches });
  } else {
    nameMatches = compileGoRegexp(".*");
  }
  let nameAs = raw.name?.as ?? "";
  if (nameAs === "" && nameMatches) {
    const groups = nameMatches.groupNames.length - 1;
    if (groups === 0) nameAs = "$0";
    else if (groups === 1) nameAs = "$1";
    else {
      problems.push(
        `${path}.name.as: required when name.matches ${
          JSON.stringify(matches)
        } has ${groups} capture groups`,
      );
    }
  }
  if (problems.length > before) return null;
  return {
    path,
    seriesQuery: raw.seriesQuery ?? "",
    seriesFilters,
    resources,
    nameMatches: nameMatches!,
    nameAs,
    metricsQuery,
    metricsQueryTemplate: metricsQueryTemplate!,
  };
}

type RawResourceRule = z.infer<typeof ResourceRuleSchema> | null | undefined;

function resourceRule(raw: RawResourceRule, path: string, problems: string[]): ResourceRule {
  const containerQuery = raw?.containerQuery ?? "";
  const nodeQuery = raw?.nodeQuery ?? "";
  return {
    path,
    containerQuery,
    containerQueryTemplate: compileTemplate(containerQuery, `${path}.containerQuery`, problems)!,
    nodeQuery,
    nodeQueryTemplate: compileTemplate(nodeQuery, `${path}.nodeQuery`, problems)!,
    resources: resourceMapping(raw?.resources, path, problems),
    containerLabel: raw?.containerLabel ?? "",
  };
}

/**
 * Read a parsed prometheus-adapter config file (null or an empty document is an empty
 * config). Throws {@linkcode PrometheusAdapterConfigError} listing every problem.
 *
 * @example
 * ```ts
 * const config = parsePrometheusAdapterConfig({
 *   rules: [{
 *     seriesQuery: '{__name__=~"^container_.*",namespace!="",pod!=""}',
 *     resources: { overrides: { namespace: { resource: "namespace" }, pod: { resource: "pod" } } },
 *     name: { matches: "^container_(.*)_seconds_total$" },
 *     metricsQuery: "sum(rate(<<.Series>>{<<.LabelMatchers>>}[2m])) by (<<.GroupBy>>)",
 *   }],
 * });
 * config.rules[0].nameAs; // "$1"
 * ```
 */
export function parsePrometheusAdapterConfig(obj: unknown): PrometheusAdapterConfig {
  const input = obj ?? {};
  const result = ConfigSchema.safeParse(input);
  if (!result.success) {
    throw new PrometheusAdapterConfigError(zodProblems(result.error.issues, input));
  }
  const raw = result.data;
  const problems: string[] = [];
  const rules: DiscoveryRule[] = [];
  const externalRules: DiscoveryRule[] = [];
  (raw.rules ?? []).forEach((r, i) => {
    const rule = discoveryRule(r, `rules[${i}]`, problems);
    if (rule) rules.push(rule);
  });
  (raw.externalRules ?? []).forEach((r, i) => {
    const rule = discoveryRule(r, `externalRules[${i}]`, problems);
    if (rule) externalRules.push(rule);
  });
  let resourceRules: ResourceRules | null = null;
  if (raw.resourceRules) {
    let windowSeconds = 0;
    if (raw.resourceRules.window) {
      try {
        windowSeconds = parsePrometheusDuration(raw.resourceRules.window);
      } catch (err) {
        problems.push(`resourceRules.window: ${(err as Error).message}`);
      }
    }
    resourceRules = {
      cpu: resourceRule(raw.resourceRules.cpu, "resourceRules.cpu", problems),
      memory: resourceRule(raw.resourceRules.memory, "resourceRules.memory", problems),
      windowSeconds,
    };
  }
  if (problems.length > 0) throw new PrometheusAdapterConfigError(problems);
  return { rules, externalRules, resourceRules };
}
