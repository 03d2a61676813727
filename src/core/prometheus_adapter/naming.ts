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
}

function groupResourceString(gr: GroupResource): string {
  return gr.group === "" ? gr.resource : `${gr.resource}.${gr.group}`;
}

/**
 * A {@linkcode ResourceMapper} over a fixed list of kinds, resolving as
 * k8s.io/apimachinery's DefaultRESTMapper does without versions: names lower-cased, plurals
 * guessed from the kind (`Ingress` -> `ingresses`, `Policy` -> `policies`), a group matched
 * exactly or else by prefix (`apps` and `networking` match `networking.k8s.io`).
 *
 * @example
 * ```ts
 * const mapper = staticResourceMapper([{ group: "", kind: "Pod" }, { group: "apps", kind: "Deployment" }]);
 * mapper.resourceFor({ group: "", resource: "deployment" }); // { group: "apps", resource: "deployments" }
 * mapper.singular("pods"); // "pod"
 * ```
 */
export function staticResourceMapper(kinds: readonly KindInfo[]): ResourceMapper {
  const entries = kinds.map((k) => {
    const singular = k.singular ?? k.kind.toLowerCase();
    let plural = k.plural;
    if (plural === undefined) {
      if (singular.endsWith("endpoints")) plural = singular;
      else if (singular.endsWith("s")) plural = `${singular}es`;
      else if (singular.endsWith("y")) plural = `${singular.slice(0, -1)}ies`;
      else plural = `${singular}s`;
    }
    return { group: k.group, plural, singular };
  });
  function resourcesFor(gr: GroupResource): typeof entries {
    const resource = gr.resource.toLowerCase();
    if (resource === "") throw new Error(`a resource must be present, got: ${gr.group}`);
    const named = (e: (typeof entries)[number]) => e.plural === resource || e.singular === resource;
    let found = entries.filter((e) => named(e) && (gr.group === "" || e.group === gr.group));
    if (found.length === 0 && gr.group !== "") {
      found = entries.filter((e) => named(e) && e.group.startsWith(gr.group));
    }
    if (found.length === 0) {
      throw new Error(
        `no matches for ${gr.group === "" ? "" : `${gr.group}/`}, Resource=${resource}`,
      );
    }
    return found;
  }
  return {
    resourceFor(gr) {
      const found = resourcesFor(gr);
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
      const found = resourcesFor({ group: "", resource });
      const singulars = new Set(found.map((e) => e.singular));
      if (singulars.size > 1) {
        throw new Error(`multiple possible singular resources found for ${resource}`);
      }
      return found[0].singular;
    },
  };
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
