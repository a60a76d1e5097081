/**
 * The process's memory and its caches' on `/metrics`: sampled when a scrape or a snapshot asks,
 * not counted as they change (a cache knows its own totals; nothing on a turn's path updates a
 * gauge).
 *
 * @module
 */
import type { CacheName } from "./catalogue.ts";
import type { GatewayMetrics } from "./registry.ts";

/** What a cache says of itself (`lib/cache`'s `CacheStats`, read as it is shaped). */
export interface SampledCache {
  readonly held: number;
  readonly capacity: number;
  readonly bytes: number;
  readonly hits: number;
  readonly misses: number;
}

/** The caches sampled, each by a function giving its stats now. */
export type CacheSources = Partial<Record<CacheName, () => SampledCache>>;

/**
 * A function that writes the process's memory (`usage`, `Deno.memoryUsage` by default) and each
 * cache's stats into `metrics`: the gauges as they are now, the lookup counters by what was added
 * since the last sample.
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { createMetrics } from "./registry.ts";
 * import { memorySampler } from "./memory.ts";
 * const metrics = createMetrics();
 * let hits = 3;
 * const sample = memorySampler(metrics, {
 *   chains: () => ({ held: 10, capacity: 100, bytes: 80, hits, misses: 1 }),
 * });
 * sample();
 * hits = 5;
 * sample();
 * const series = metrics.registry.values;
 * assert.ok(series.length > 0);
 * ```
 */
export function memorySampler(
  metrics: GatewayMetrics,
  caches: CacheSources,
  usage: () => Deno.MemoryUsage = () => Deno.memoryUsage(),
): () => void {
  const seen = new Map<CacheName, { hits: number; misses: number }>();
  return () => {
    const memory = usage();
    metrics.processMemory.set(memory.rss, "rss");
    metrics.processMemory.set(memory.heapUsed, "heap_used");
    metrics.processMemory.set(memory.heapTotal, "heap_total");
    metrics.processMemory.set(memory.external, "external");
    for (const [name, stats] of Object.entries(caches) as [CacheName, () => SampledCache][]) {
      const now = stats();
      metrics.cacheBytes.set(now.bytes, name);
      metrics.cacheHeld.set(now.held, name);
      metrics.cacheCapacity.set(now.capacity, name);
      const before = seen.get(name) ?? { hits: 0, misses: 0 };
      metrics.cacheLookups.add(Math.max(0, now.hits - before.hits), name, "hit");
      metrics.cacheLookups.add(Math.max(0, now.misses - before.misses), name, "miss");
      seen.set(name, { hits: now.hits, misses: now.misses });
    }
  };
}
