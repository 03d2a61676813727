/**
 * prometheus-adapter v0.12.0's config file, read and rendered as it does: rules, naming,
 * resource labels and `metricsQuery` templates. Pure: the YAML is parsed by the caller.
 *
 * @module
 */
export * from "./config.ts";
export * from "./naming.ts";
export * from "./query.ts";
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
