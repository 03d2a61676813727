/**
 * prometheus-adapter's naming (pkg/naming): which discovered series a rule keeps
 * (`seriesFilters`, `name.matches`), the name a series gets in the API (`name.as`, expanded
 * as Go's `Regexp.ExpandString` does), and how labels and Kubernetes resources map to each
 * other (`resources.overrides`, `resources.template`), through a {@linkcode ResourceMapper}
 * that stands for the cluster's RESTMapper.
 *
 * @module
 */

import type { DiscoveryRule, GroupResource, ResourceMapping } from "./config.ts";
import { groupResourceValue } from "./config.ts";
import { expandGoTemplate, goMatch } from "./regex.ts";
import { executeGoTemplate } from "./template.ts";

/** The cluster's resource names, as a RESTMapper answers for them. */
export interface ResourceMapper {
  /**
   * The plural group-resource that `gr` (plural or singular, group optional) names; throws
   * when none or several do.
   */
  resourceFor(gr: GroupResource): GroupResource;
  /** The singular of a resource name (`pods` -> `pod`); throws when unknown. */
  singular(resource: string): string;
  /**
   * The kind of a plural group-resource, with its preferred version (`describedObject`) and
   * scope; null when the cluster does not serve it.
   */
  kindOf(gr: GroupResource): KindInfo | null;
}

/** A kind the cluster serves, for {@linkcode staticResourceMapper}. */
export interface KindInfo {
  group: string;
  kind: string;
  /** Resource names when the guess from the kind is wrong (CRDs may choose their own). */
  plural?: string;
  singular?: string;
  /** The version the cluster prefers (the RESTMapper's first): `describedObject.apiVersion`. */
  version?: string;
  /** Whether its objects live in namespaces (discovery's `namespaced`); unknown when absent. */
  namespaced?: boolean;
  /**
   * Its place in discovery's listed order (each group's versions as listed, not preferred
   * first), where it differs from the list's: a singular is looked up in that order.
   */
  listed?: number;
}

function groupResourceString(gr: GroupResource): string {
  return gr.group === "" ? gr.resource : `${gr.resource}.${gr.group}`;
}

/**
 * A {@linkcode ResourceMapper} over a list of kinds in the cluster's priority order (discovery's
 * order: the core group first, then the groups as the server lists them, each group's preferred
 * version first), resolving as client-go's discovery RESTMapper (a PriorityRESTMapper over one
 * DefaultRESTMapper per group version) does: names lower-cased, plurals guessed from the kind
 * when not given (`Ingress` -> `ingresses`, `Policy` -> `policies`), a group matched by prefix
 * (`apps` and `networking` match `networking.k8s.io`; each group version's mapper matches its
 * own group exactly or else by prefix, so together every group the name prefixes), and a name
 * several groups serve resolved to the first of them in order (`pods` is the core group's, not
 * metrics.k8s.io's); a name one group serves as two resources is ambiguous. The first kind of a
 * group and plural counts; later ones (other versions) are ignored. A singular is the first
 * group version's that has the name, as plural or singular.
 *
 * @example
 * ```ts
 * const mapper = staticResourceMapper([{ group: "", kind: "Pod" }, { group: "apps", kind: "Deployment" }]);
 * mapper.resourceFor({ group: "", resource: "deployment" }); // { group: "apps", resource: "deployments" }
 * mapper.singular("pods"); // "pod"
 * ```
 */
export function staticResourceMapper(kinds: readonly KindInfo[]): ResourceMapper {
  interface Entry {
    group: string;
    version: string;
    plural: string;
    singular: string;
    info: KindInfo;
  }
  // in priority order: each group version's kinds, the preferred version first
  const entries: Entry[] = kinds.map((k) => {
    const singular = (k.singular || k.kind).toLowerCase();
    return {
      group: k.group,
      version: k.version ?? "",
      plural: pluralOf(k, singular),
      singular,
      info: k,
    };
  });
  // the priority patterns: each group version in order, then each group whatever the version
  const versionRank = new Map<string, number>();
  for (const e of entries) {
    const id = `${e.group}\0${e.version}`;
    if (!versionRank.has(id)) versionRank.set(id, versionRank.size);
  }
  const groupRank = new Map<string, number>();
  for (const e of entries) {
    if (!groupRank.has(e.group)) groupRank.set(e.group, versionRank.size + groupRank.size);
  }
  // the group versions in listed order (a MultiRESTMapper's), for singulars
  const byVersion = new Map<string, Entry[]>();
  const listed = entries.map((e, i) => ({ e, i })).sort((a, b) =>
    (a.e.info.listed ?? a.i) - (b.e.info.listed ?? b.i)
  );
  for (const { e } of listed) {
    const id = `${e.group}\0${e.version}`;
    const list = byVersion.get(id);
    if (list) list.push(e);
    else byVersion.set(id, [e]);
  }
  const named = (e: Entry, resource: string) => e.plural === resource || e.singular === resource;
  return {
    resourceFor(gr) {
      const resource = gr.resource.toLowerCase();
      if (resource === "") throw new Error(`a resource must be present, got: ${gr.group}`);
      // each group version's mapper matches its group exactly or else by prefix: together,
      // every group the requested one prefixes; one resource per group version and plural
      const seen = new Set<string>();
      let found: Entry[] = [];
      for (const e of entries) {
        if (!named(e, resource) || !e.group.startsWith(gr.group)) continue;
        const id = `${e.group}\0${e.version}\0${e.plural}`;
        if (seen.has(id)) continue;
        seen.add(id);
        found.push(e);
      }
      if (found.length === 0) {
        throw new Error(
          `no matches for ${gr.group === "" ? "" : `${gr.group}/`}, Resource=${resource}`,
        );
      }
      // the PriorityRESTMapper: the first pattern that one of them alone matches
      const patterns = [
        ...[...versionRank.keys()].map((id) => (e: Entry) => `${e.group}\0${e.version}` === id),
        ...[...groupRank.keys()].map((g) => (e: Entry) => e.group === g),
      ];
      for (const matches of patterns) {
        if (found.length === 1) break;
        const matched = found.filter(matches);
        if (matched.length === 1) found = matched;
        else if (matched.length > 1) found = matched;
      }
      if (found.length > 1) {
        throw new Error(
          `${groupResourceString(gr)} matches multiple resources: ${
            found.map((e) => groupResourceString({ group: e.group, resource: e.plural })).join(", ")
          }`,
        );
      }
      return { group: found[0].group, resource: found[0].plural };
    },
    singular(resource) {
      // the first group version (in listed order) with one singular for the name
      const lower = resource.toLowerCase();
      for (const list of byVersion.values()) {
        const singulars = new Set(list.filter((e) => named(e, lower)).map((e) => e.singular));
        if (singulars.size === 1) return [...singulars][0];
      }
      throw new Error(`no singular of resource ${lower} has been defined`);
    },
    kindOf(gr) {
      return entries.find((e) => e.group === gr.group && e.plural === gr.resource)?.info ?? null;
    },
  };
}

/** A kind's plural: the one given, else apimachinery's guess from the singular. */
function pluralOf(k: KindInfo, singular: string): string {
  const given = k.plural?.toLowerCase();
  if (given !== undefined && given !== "") return given;
  if (singular.endsWith("endpoints")) return singular;
  if (singular.endsWith("s")) return `${singular}es`;
  if (singular.endsWith("y")) return `${singular.slice(0, -1)}ies`;
  return `${singular}s`;
}

/** The namespace resource, whose label upstream adds to every namespaced query. */
export const NAMESPACES: GroupResource = { group: "", resource: "namespaces" };
const CLUSTER_SCOPED = new Set(["namespaces", "nodes", "persistentvolumes"]);

/**
 * A rule's mapping between series labels and Kubernetes resources (upstream's
 * resourceConverter), without its cache: overrides first, then the template.
 */
export class ResourceConverter {
  readonly #mapping: ResourceMapping;
  readonly #mapper: ResourceMapper;
  readonly #labelToResource = new Map<string, GroupResource>();
  readonly #resourceToLabel = new Map<string, string>();

  /**
   * Resolves the overrides against the cluster; throws when one names no resource
   * (`rules[0].resources.overrides.pod: unable to normalize group-resource ...`).
   */
  constructor(mapping: ResourceMapping, mapper: ResourceMapper, path = "") {
    this.#mapping = mapping;
    this.#mapper = mapper;
    for (const [label, gr] of mapping.overrides) {
      let normalized: GroupResource;
      try {
        normalized = mapper.resourceFor(gr);
        mapper.singular(normalized.resource);
      } catch (err) {
        throw new Error(
          `${path}.resources.overrides.${label}: unable to normalize group-resource ${
            groupResourceString(gr)
          }: ${(err as Error).message}`,
        );
      }
      this.#labelToResource.set(label, normalized);
      this.#resourceToLabel.set(key(normalized), label);
    }
  }

  /**
   * The label that names objects of `resource` (as the request names it): its override, else
   * the template with the group sanitised (`.` and `-` to `_`) and the resource singular.
   */
  labelForResource(resource: GroupResource): string {
    const override = this.#resourceToLabel.get(key(resource));
    if (override !== undefined) return override;
    const fail = (why: string): never => {
      throw new Error(
        `unable to convert resource ${groupResourceString(resource)} into label: ${why}`,
      );
    };
    const template = this.#mapping.labelTemplate;
    if (template === null) return fail("no generic resource label form specified for this metric");
    let singular: string;
    try {
      singular = this.#mapper.singular(resource.resource);
    } catch (err) {
      return fail(
        `unable to singularize resource ${groupResourceString(resource)}: ${
          (err as Error).message
        }`,
      );
    }
    const label = executeGoTemplate(
      template,
      groupResourceValue(resource.group.replace(/[.-]/g, "_"), singular),
    );
    if (label === "") return fail("empty label produced by label template");
    return label;
  }

  /**
   * The resources a series with these label names is about, and whether it is namespaced, as
   * upstream's ResourcesForSeries decides: any label that is not an override or a template
   * match, or names something other than namespaces, nodes and persistentvolumes, makes it
   * namespaced; a template match the cluster does not know is skipped.
   */
  resourcesForSeries(
    labels: Iterable<string>,
  ): { resources: GroupResource[]; namespaced: boolean } {
    const resources: GroupResource[] = [];
    let namespaced = false;
    for (const label of labels) {
      let gr = this.#labelToResource.get(label);
      if (gr === undefined && this.#mapping.labelPattern !== null) {
        const p = this.#mapping.labelPattern;
        p.regexp.regexp.lastIndex = 0;
        const m = p.regexp.regexp.exec(label);
        if (m !== null) {
          try {
            gr = this.#mapper.resourceFor({
              group: p.groupIndex === null ? "" : m[p.groupIndex] ?? "",
              resource: m[p.resourceIndex] ?? "",
            });
            this.#mapper.singular(gr.resource);
          } catch {
            continue;
          }
        }
      }
      if (gr !== undefined) resources.push(gr);
      if (gr === undefined || gr.group !== "" || !CLUSTER_SCOPED.has(gr.resource)) {
        namespaced = true;
      }
    }
    return { resources, namespaced };
  }
}

function key(gr: GroupResource): string {
  return `${gr.group}\0${gr.resource}`;
}

/**
 * Whether a rule keeps a discovered series: every `seriesFilters` entry and `name.matches`
 * must agree (`is` matches, `isNot` does not).
 */
export function keepsSeries(rule: DiscoveryRule, seriesName: string): boolean {
  return rule.seriesFilters.every((f) => goMatch(f.regexp, seriesName) === f.is);
}

/**
 * The API name of a series: `name.as` expanded with `name.matches`'s groups. Throws when
 * the name does not match.
 *
 * @example
 * ```ts
 * // name: {matches: "^(.*)_total$", as: "${1}_per_second"}
 * metricNameForSeries(rule, "http_requests_total"); // "http_requests_per_second"
 * ```
 */
export function metricNameForSeries(rule: DiscoveryRule, seriesName: string): string {
  const name = expandGoTemplate(rule.nameMatches, rule.nameAs, seriesName);
  if (name === null) {
    throw new Error(
      `series name ${JSON.stringify(seriesName)} did not match expected pattern ${
        JSON.stringify(rule.nameMatches.source)
      }`,
    );
  }
  return name;
}
