/**
 * Metrics across worker processes and hosts. Each worker counts in its own registry and publishes
 * a snapshot of it (kept in the store per host and worker); the worker that serves a scrape shows
 * its live registry and every other worker's latest snapshot, on its host and on the others
 * sharing the store, every series labelled `host="<id>",worker="<i>"`. Counters stay per process,
 * as Prometheus expects: sum them across hosts and workers in PromQL.
 *
 * @module
 */
import type { HistogramSeries, LabelPairs, MetricFamily, ScalarSeries } from "./exposition.ts";
import type { MetricsRegistry } from "./registry.ts";

/** A worker's registry as another process reads it. */
export interface MetricsSnapshot {
  /** The registry's fingerprint: a snapshot of another layout (another build) is not read. */
  readonly layout: string;
  /** When it was taken, in milliseconds since the epoch. */
  readonly at: number;
  /** The registry's values as float64s in the machine's byte order (every x86 and Arm host's). */
  readonly values: Uint8Array;
}

/** One worker's values, as the families are built from them. */
export interface WorkerValues {
  /** The worker's host (`HOST_ID`). */
  readonly host: string;
  readonly worker: number;
  readonly values: Float64Array;
}

/** How often a worker publishes its snapshot. */
export const METRICS_PUBLISH_MS = 5_000;

/**
 * How old a snapshot may be and still be shown: a worker that stopped publishing (dead, or gone
 * since `WORKERS` was lowered) drops out of scrapes after this.
 */
export const METRICS_FRESH_MS = 3 * METRICS_PUBLISH_MS;

/**
 * A copy of `registry`'s values, taken `at`.
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { createMetrics } from "./registry.ts";
 * import { takeSnapshot } from "./snapshot.ts";
 * const metrics = createMetrics();
 * const snapshot = takeSnapshot(metrics.registry);
 * assert.equal(snapshot.values.byteLength, 8 * metrics.registry.values.length); // 8 per slot
 * ```
 */
export function takeSnapshot(registry: MetricsRegistry, at = Date.now()): MetricsSnapshot {
  return {
    layout: registry.fingerprint,
    at,
    values: new Uint8Array(registry.values.slice().buffer),
  };
}

/**
 * The values of a snapshot of `registry`'s layout; `null` for another layout.
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { createMetrics } from "./registry.ts";
 * import { snapshotValues, takeSnapshot } from "./snapshot.ts";
 * const metrics = createMetrics();
 * metrics.turns.inc("append");
 * // A copy of the values, or null for a snapshot of another layout.
 * assert.deepEqual(
 *   snapshotValues(metrics.registry, takeSnapshot(metrics.registry)),
 *   metrics.registry.values,
 * );
 * ```
 */
export function snapshotValues(
  registry: MetricsRegistry,
  snapshot: MetricsSnapshot,
): Float64Array | null {
  if (snapshot.layout !== registry.fingerprint) return null;
  if (!(snapshot.values instanceof Uint8Array)) return null;
  if (snapshot.values.byteLength !== registry.values.byteLength) return null;
  return new Float64Array(snapshot.values.slice().buffer);
}

/** A worker's snapshot as the store gives it back: whose it is. */
export interface PublishedSnapshot {
  readonly host: string;
  readonly worker: number;
  readonly snapshot: MetricsSnapshot;
}

/**
 * The workers a scrape shows: `self` with its live values, then every other worker, of any host,
 * whose snapshot is of the same layout and at most {@linkcode METRICS_FRESH_MS} old, by host
 * then index.
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { readMetricsSnapshots, writeMetricsSnapshot } from "../kv/mod.ts";
 * import { createMetrics } from "./registry.ts";
 * import { METRICS_FRESH_MS, takeSnapshot, workersToShow } from "./snapshot.ts";
 * const kv = await Deno.openKv(":memory:");
 * const metrics = createMetrics();
 * for (const [host, worker] of [["a", 1], ["b", 0]] as const) {
 *   await writeMetricsSnapshot(kv, host, worker, takeSnapshot(metrics.registry), METRICS_FRESH_MS);
 * }
 * const self = { host: "a", worker: 0 };
 * const workers = workersToShow(metrics.registry, self, await readMetricsSnapshots(kv));
 * assert.deepEqual(workers.map((w) => `${w.host}/${w.worker}`), ["a/0", "a/1", "b/0"]);
 * kv.close();
 * ```
 */
export function workersToShow(
  registry: MetricsRegistry,
  self: { readonly host: string; readonly worker: number },
  snapshots: readonly PublishedSnapshot[],
  now = Date.now(),
): WorkerValues[] {
  const shown: WorkerValues[] = [{ ...self, values: registry.values }];
  for (const { host, worker, snapshot } of snapshots) {
    if (host === self.host && worker === self.worker) continue;
    if (now - snapshot.at > METRICS_FRESH_MS) continue;
    const values = snapshotValues(registry, snapshot);
    if (values) shown.push({ host, worker, values });
  }
  return shown.sort((a, b) => a.host === b.host ? a.worker - b.worker : a.host < b.host ? -1 : 1);
}

/**
 * The registry's metrics over the values of `workers`, each series labelled with its host and
 * worker first: every combination of label values, zeros included.
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { renderExposition } from "./exposition.ts";
 * import { createMetrics } from "./registry.ts";
 * import { workerFamilies } from "./snapshot.ts";
 * const metrics = createMetrics();
 * metrics.turns.inc("append");
 * const text = renderExposition(
 *   workerFamilies(metrics.registry, [{ host: "a", worker: 0, values: metrics.registry.values }]),
 * );
 * assert.match(text, /rollout_gateway_turns_total\{host="a",worker="0",route="append"\} 1/);
 * ```
 */
export function workerFamilies(
  registry: MetricsRegistry,
  workers: readonly WorkerValues[],
): MetricFamily[] {
  return registry.layout.map(({ spec, offset, series, width }) => {
    const combos = labelCombos(spec.labels);
    const head = { name: spec.name, help: spec.help };
    if (spec.type !== "histogram") {
      const out: ScalarSeries[] = [];
      for (const { host, worker, values } of workers) {
        for (let s = 0; s < series; s++) {
          out.push({ labels: withWorker(host, worker, combos[s]), value: values[offset + s] });
        }
      }
      return { ...head, type: spec.type, series: out };
    }
    const bounds = spec.buckets ?? [];
    const out: HistogramSeries[] = [];
    for (const { host, worker, values } of workers) {
      for (let s = 0; s < series; s++) {
        const first = offset + s * width;
        let count = 0;
        const buckets = bounds.map((le, b) => [le, count += values[first + b]] as const);
        count += values[first + bounds.length];
        const sum = values[first + bounds.length + 1];
        out.push({ labels: withWorker(host, worker, combos[s]), buckets, sum, count });
      }
    }
    return { ...head, type: "histogram", series: out };
  });
}

/** Every combination of label values, the last label varying fastest (the slots' order). */
function labelCombos(labels: readonly (readonly [string, readonly string[]])[]): LabelPairs[] {
  let combos: LabelPairs[] = [[]];
  for (const [name, values] of labels) {
    combos = combos.flatMap((combo) => values.map((value) => [...combo, [name, value] as const]));
  }
  return combos;
}

function withWorker(host: string, worker: number, labels: LabelPairs): LabelPairs {
  return [["host", host], ["worker", String(worker)], ...labels];
}
