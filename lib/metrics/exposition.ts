/**
 * The Prometheus text exposition format, version 0.0.4: per family a `# HELP` and a `# TYPE`
 * line, then one line per sample; a histogram's series as cumulative `_bucket{le="…"}` lines
 * ending at `+Inf`, then `_sum` and `_count`.
 *
 * @module
 */
import type { MetricType } from "./catalogue.ts";

/** The `content-type` of a response in this format. */
export const EXPOSITION_CONTENT_TYPE = "text/plain; version=0.0.4; charset=utf-8";

/** Label names and values of a series, in the order they are written. */
export type LabelPairs = readonly (readonly [name: string, value: string])[];

/** One series of a counter or a gauge. */
export interface ScalarSeries {
  readonly labels: LabelPairs;
  readonly value: number;
}

/** One series of a histogram. */
export interface HistogramSeries {
  readonly labels: LabelPairs;
  /** Upper bounds and the observations at or below each (cumulative), without `+Inf`. */
  readonly buckets: readonly (readonly [le: number, count: number])[];
  readonly sum: number;
  /** Every observation: the `+Inf` bucket. */
  readonly count: number;
}

/** A metric and its series, as written. */
export type MetricFamily =
  | {
    readonly name: string;
    readonly help: string;
    readonly type: Exclude<MetricType, "histogram">;
    readonly series: readonly ScalarSeries[];
  }
  | {
    readonly name: string;
    readonly help: string;
    readonly type: "histogram";
    readonly series: readonly HistogramSeries[];
  };

/**
 * The exposition of `families`, in their order.
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { renderExposition } from "./exposition.ts";
 * const text = renderExposition([{
 *   name: "rollout_gateway_turns_total",
 *   help: "Turns answered.",
 *   type: "counter",
 *   series: [{ labels: [["route", "append"]], value: 3 }],
 * }]);
 * assert.equal(
 *   text,
 *   "# HELP rollout_gateway_turns_total Turns answered.\n" +
 *     "# TYPE rollout_gateway_turns_total counter\n" +
 *     'rollout_gateway_turns_total{route="append"} 3\n',
 * );
 * ```
 */
export function renderExposition(families: readonly MetricFamily[]): string {
  const lines: string[] = [];
  for (const family of families) {
    const { name } = family;
    lines.push(`# HELP ${name} ${escapeHelp(family.help)}`, `# TYPE ${name} ${family.type}`);
    if (family.type !== "histogram") {
      for (const series of family.series) {
        lines.push(`${name}${labelSet(series.labels)} ${formatNumber(series.value)}`);
      }
      continue;
    }
    for (const series of family.series) {
      for (const [le, count] of series.buckets) {
        const labels = labelSet([...series.labels, ["le", formatNumber(le)]]);
        lines.push(`${name}_bucket${labels} ${formatNumber(count)}`);
      }
      const inf = labelSet([...series.labels, ["le", "+Inf"]]);
      lines.push(`${name}_bucket${inf} ${formatNumber(series.count)}`);
      lines.push(`${name}_sum${labelSet(series.labels)} ${formatNumber(series.sum)}`);
      lines.push(`${name}_count${labelSet(series.labels)} ${formatNumber(series.count)}`);
    }
  }
  return lines.length === 0 ? "" : `${lines.join("\n")}\n`;
}

/**
 * A help text as `# HELP` writes it: backslash and line feed escaped.
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { escapeHelp } from "./exposition.ts";
 * assert.equal(escapeHelp("a\\b\nc"), "a\\\\b\\nc");
 * ```
 */
export function escapeHelp(help: string): string {
  return help.replaceAll("\\", "\\\\").replaceAll("\n", "\\n");
}

/**
 * A label value as written between quotes: backslash, double quote and line feed escaped.
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { escapeLabelValue } from "./exposition.ts";
 * assert.equal(escapeLabelValue('say "hi"\n'), 'say \\"hi\\"\\n');
 * ```
 */
export function escapeLabelValue(value: string): string {
  return value.replaceAll("\\", "\\\\").replaceAll('"', '\\"').replaceAll("\n", "\\n");
}

/**
 * A sample value: Go's float syntax, `+Inf`, `-Inf` and `NaN` spelled as Prometheus does.
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { formatNumber } from "./exposition.ts";
 * assert.equal(formatNumber(0.25), "0.25");
 * assert.equal(formatNumber(Infinity), "+Inf");
 * ```
 */
export function formatNumber(value: number): string {
  if (Number.isNaN(value)) return "NaN";
  if (value === Infinity) return "+Inf";
  if (value === -Infinity) return "-Inf";
  return String(value);
}

function labelSet(labels: LabelPairs): string {
  if (labels.length === 0) return "";
  return `{${labels.map(([name, value]) => `${name}="${escapeLabelValue(value)}"`).join(",")}}`;
}
