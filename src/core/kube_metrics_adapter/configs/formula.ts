/**
 * The config of formula metrics (issue 21): an External metric with `matchLabels.type: formula`
 * whose `expression` (required) is computed over the HPA's other metric definitions, and an
 * optional `activation-target` (a number, shown and not enforced: the HPA cannot scale to zero
 * on its own). Whether the expression's identifiers name inputs is the planner's check; the
 * syntax is checked here.
 */
import { z } from "zod";
import {
  type CollectorDescriptor,
  configKey,
  type ConfigSchema,
  REQUIRED,
} from "../collector_config.ts";
import { compileFormula, FormulaError } from "../../formula.ts";

/** The type of formula metrics (`matchLabels.type`, the annotations' collector segment). */
export const FORMULA_TYPE = "formula";

/** A formula metric's config. */
export interface FormulaConfig {
  /** `expression`, as written. */
  expression: string;
  /** `activation-target`, when given. */
  activationTarget?: number;
}

const schema: ConfigSchema<FormulaConfig> = z.looseObject({
  expression: configKey((v) => {
    if (v.trim() === "") throw new Error(`${REQUIRED} (an empty formula computes nothing)`);
    try {
      compileFormula(v);
    } catch (e) {
      if (e instanceof FormulaError) throw new Error(e.message);
      throw e;
    }
    return v;
  }, { required: true }),
  "activation-target": configKey((v) => {
    const n = v.trim() === "" ? NaN : Number(v);
    if (!Number.isFinite(n)) throw new Error("want a number");
    return n;
  }),
}).transform((c): FormulaConfig =>
  c["activation-target"] === undefined
    ? { expression: c.expression }
    : { expression: c.expression, activationTarget: c["activation-target"] }
) as unknown as ConfigSchema<FormulaConfig>;

/**
 * `formula`: an External metric computed from the HPA's other metrics. It is not a backend:
 * the engine evaluates it after its inputs' collections, so it is always enabled and has no
 * collector factory.
 */
export const formulaDescriptor: CollectorDescriptor<FormulaConfig> = {
  type: FORMULA_TYPE,
  metricTypes: ["External"],
  enabledBy: "nothing: formulas are always on",
  schema(): ConfigSchema<FormulaConfig> {
    return schema;
  },
};
