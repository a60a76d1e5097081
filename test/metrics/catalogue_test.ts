import assert from "node:assert/strict";
import type { EvaluationReason } from "../../lib/evaluate/mod.ts";
import {
  CATALOGUE,
  EVALUATION_OUTCOMES,
  GROUP_TOOL_TURNS,
  type MetricSpec,
  ROLLOUT_PHASES,
  ROUTE_KINDS,
} from "../../lib/metrics/mod.ts";
import type { RolloutPhase } from "../../lib/rollout/mod.ts";
import type { RouteKind } from "../../lib/session/mod.ts";

/** `true` only when `A` and `B` are the same union. */
type Same<A, B> = [A] extends [B] ? ([B] extends [A] ? true : false) : false;

// The label sets name exactly the domain's values: a new route kind, phase or evaluation
// reason fails to compile here until the catalogue lists it.
const routes: Same<RouteKind, typeof ROUTE_KINDS[number]> = true;
const phases: Same<RolloutPhase, typeof ROLLOUT_PHASES[number]> = true;
const outcomes: Same<EvaluationReason | "error", typeof EVALUATION_OUTCOMES[number]> = true;

const METRIC_NAME = /^rollout_gateway_[a-z][a-z0-9_]*$/;
const LABEL_NAME = /^[a-z][a-z0-9_]*$/;

function problems(spec: MetricSpec): string[] {
  const found: string[] = [];
  if (!METRIC_NAME.test(spec.name)) found.push("a name without the prefix or in other characters");
  if ((spec.type === "counter") !== spec.name.endsWith("_total")) {
    found.push("_total on a counter and only there");
  }
  if (/_(bucket|sum|count)$/.test(spec.name)) found.push("a histogram suffix");
  if (!spec.help.endsWith(".") || spec.help.includes("\n")) {
    found.push("a one-line help ending in a period");
  }
  const names = spec.labels.map(([name]) => name);
  if (new Set(names).size !== names.length) found.push("a label twice");
  for (const [name, values] of spec.labels) {
    if (!LABEL_NAME.test(name) || ["worker", "le"].includes(name)) found.push(`label "${name}"`);
    if (new Set(values).size !== values.length) found.push(`a value of "${name}" twice`);
    if (values.some((value) => value === "")) found.push(`an empty value of "${name}"`);
  }
  const buckets = spec.buckets ?? [];
  if ((spec.type === "histogram") !== buckets.length > 0) found.push("buckets on a histogram only");
  if (buckets.some((le, i) => i > 0 && le <= buckets[i - 1])) found.push("buckets not ascending");
  return found;
}

Deno.test("every metric is named rollout_gateway_…, counters …_total, with one-line help and closed, distinct labels", () => {
  assert.ok(routes && phases && outcomes);
  const specs: MetricSpec[] = [...Object.values(CATALOGUE), GROUP_TOOL_TURNS];
  const names = specs.map((spec) => spec.name);
  assert.equal(new Set(names).size, names.length, "no name twice");
  assert.deepEqual(
    Object.fromEntries(
      specs.map((spec) => [spec.name, problems(spec)]).filter(([, p]) => p.length),
    ),
    {},
  );
});

Deno.test("the gateway's metrics have at most three labels each, and the set of series is small", () => {
  const specs = Object.values(CATALOGUE) as MetricSpec[];
  assert.ok(specs.every((spec) => spec.labels.length <= 3));
  const series = specs.reduce(
    (sum, spec) => sum + spec.labels.reduce((n, [, values]) => n * values.length, 1),
    0,
  );
  assert.ok(series < 200, `${series} series per worker`);
});
