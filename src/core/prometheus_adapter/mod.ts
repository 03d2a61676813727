/**
 * prometheus-adapter v0.12.0's config file, read and rendered as it does: rules, naming,
 * resource labels, `metricsQuery` templates, series discovery and `resourceRules` reads. Pure:
 * the YAML is parsed, and Prometheus queried, by the caller.
 *
 * @module
 */
export * from "./config.ts";
export * from "./discovery.ts";
export * from "./naming.ts";
export * from "./query.ts";
export * from "./resource.ts";
export { compileGoRegexp, expandGoTemplate, goMatch, type GoRegexp } from "./regex.ts";
export {
  executeGoTemplate,
  formatGoValue,
  type GoStruct,
  type GoTemplate,
  type GoValue,
  parseGoTemplate,
  quoteGoString,
} from "./template.ts";
export * from "./serving.ts";
export * from "./plan.ts";
export * from "./rest_mapper.ts";
