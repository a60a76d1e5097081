/**
 * The tool turns of the newest rollout groups as a Prometheus gauge, read from KV when scraped:
 * the same on every gateway process, so it carries no worker label.
 *
 * @module
 */
import { listRolloutGroups } from "./rollout_store.ts";
import {
  GROUP_METRICS_LIMIT,
  GROUP_STATS,
  GROUP_TOOL_TURNS,
  type MetricFamily,
  type ScalarSeries,
} from "../metrics/mod.ts";
import { readGroupSummary } from "./group_view.ts";
import type { Store } from "../kv/mod.ts";

/** A group id as the gateway makes them: safe as a label value. */
const GROUP_ID = /^grp_[0-9a-f]{24}$/;

/**
 * `rollout_gateway_group_tool_turns{group, stat}` over the newest `limit` groups: mean, min and
 * max tool turns of each group's finished jobs (a group with none has no series yet).
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { renderExposition } from "../metrics/mod.ts";
 * import { groupToolTurnsFamily } from "./group_metrics.ts";
 * const kv = await Deno.openKv(":memory:");
 * // One series per group and statistic once jobs ran, e.g.
 * // rollout_gateway_group_tool_turns{group="grp_…",stat="mean"} 3
 * const text = renderExposition([await groupToolTurnsFamily(kv)]);
 * assert.match(text, /^# HELP rollout_gateway_group_tool_turns /);
 * kv.close();
 * ```
 */
export async function groupToolTurnsFamily(
  kv: Store,
  limit = GROUP_METRICS_LIMIT,
): Promise<MetricFamily> {
  const { groups } = await listRolloutGroups(kv, { limit });
  const summaries = await Promise.all(
    groups.filter((group) => GROUP_ID.test(group.id)).map((group) => readGroupSummary(kv, group)),
  );
  const series: ScalarSeries[] = [];
  for (const { id, toolTurns } of summaries) {
    if (toolTurns === null) continue;
    for (const stat of GROUP_STATS) {
      series.push({ labels: [["group", id], ["stat", stat]], value: toolTurns[stat] });
    }
  }
  return { name: GROUP_TOOL_TURNS.name, help: GROUP_TOOL_TURNS.help, type: "gauge", series };
}
