/**
 * Test helpers for `/metrics`: the exposition parsed by a real Prometheus text parser from npm
 * (`prom2javascript`, which also checks that each histogram's `+Inf` bucket equals its count),
 * and the series that moved between two scrapes.
 *
 * @module
 */
import assert from "node:assert/strict";
import { getMetricsFromIterator, type PromMetrics } from "prom2javascript";
import {
  CATALOGUE,
  type GatewayMetrics,
  workerFamilies,
  workersToShow,
} from "../lib/metrics/mod.ts";

/** Metric families by name, as the parser gives them. */
export type Parsed = PromMetrics;

/** Parses an exposition; throws on a line or a histogram the parser does not accept. */
export function parseExposition(text: string): Promise<Parsed> {
  return getMetricsFromIterator(text.split("\n")[Symbol.iterator]());
}

/** A series' identity: its name and its labels, sorted (`name{a="1",b="2"}`). */
export function seriesId(name: string, labels: Record<string, string> = {}): string {
  const pairs = Object.entries(labels).sort(([a], [b]) => a < b ? -1 : a > b ? 1 : 0);
  return `${name}{${pairs.map(([key, value]) => `${key}="${value}"`).join(",")}}`;
}

/**
 * The families sampled from the process's own state (its memory, its caches): they move with the
 * process's life, not by what a request did, and are tested apart (test/metrics/memory_test.ts).
 */
export const SAMPLED_FAMILIES: readonly string[] = [
  CATALOGUE.processMemory.name,
  CATALOGUE.cacheBytes.name,
  CATALOGUE.cacheHeld.name,
  CATALOGUE.cacheCapacity.name,
  CATALOGUE.cacheLookups.name,
];

/**
 * Every counter and gauge series by {@linkcode seriesId}, and each histogram series' `_count`;
 * not a histogram's buckets or sum, which depend on how long things took, nor the
 * {@linkcode SAMPLED_FAMILIES}.
 */
export function countable(parsed: Parsed): Map<string, number> {
  const values = new Map<string, number>();
  for (const [name, family] of Object.entries(parsed)) {
    if (SAMPLED_FAMILIES.includes(name)) continue;
    for (const series of family.data) {
      if ("buckets" in series) values.set(seriesId(`${name}_count`, series.labels), series.count);
      else if ("value" in series) values.set(seriesId(name, series.labels), series.value);
      else assert.fail(`${name}: a summary`);
    }
  }
  return values;
}

/**
 * The series whose value changed from `before` to `after`, with the change; a series only
 * `after` has counts from 0.
 */
export function moved(
  before: ReadonlyMap<string, number>,
  after: ReadonlyMap<string, number>,
): Record<string, number> {
  const changes: Record<string, number> = {};
  for (const [id, value] of after) {
    const change = value - (before.get(id) ?? 0);
    if (change !== 0) changes[id] = change;
  }
  for (const id of before.keys()) assert.ok(after.has(id), `${id} disappeared`);
  return changes;
}

/**
 * What a process's metrics hold besides zeros and its start time: counters and gauges by
 * {@linkcode seriesId} (without the host and worker labels), histograms by their `_count`.
 */
export function nonZero(metrics: GatewayMetrics): Record<string, number> {
  const found: Record<string, number> = {};
  const [worker] = workersToShow(metrics.registry, { host: "h", worker: 0 }, []);
  for (const family of workerFamilies(metrics.registry, [worker])) {
    if (family.name === CATALOGUE.startTime.name || SAMPLED_FAMILIES.includes(family.name)) {
      continue;
    }
    for (const series of family.series) {
      const labels = Object.fromEntries(
        series.labels.filter(([name]) => name !== "worker" && name !== "host"),
      );
      const [id, value] = "buckets" in series
        ? [seriesId(`${family.name}_count`, labels), series.count]
        : [seriesId(family.name, labels), series.value];
      if (value !== 0) found[id] = value;
    }
  }
  return found;
}
