/**
 * Each worker's latest metrics snapshot, one entry per host and worker index, so the worker
 * serving a scrape shows every other one, on its host and on the others sharing the store. An
 * entry expires on its own (`expireIn`, which KV applies lazily): readers go by the snapshot's own
 * time, not by the entry's presence.
 *
 * @module
 */
import type { MetricsSnapshot } from "../metrics/mod.ts";
import { commit } from "./atomic.ts";
import { keys, KV_MAX_VALUE_BYTES, parseKey } from "./keys.ts";
import type { Store } from "./store.ts";

/** Room left in a KV value for a snapshot's other fields and the value's encoding. */
const SNAPSHOT_HEADROOM_BYTES = 1_024;

/**
 * Writes the snapshot of worker `worker` of host `host`, to expire after `expireInMs`.
 *
 * @example
 * ```ts
 * import { createMetrics, METRICS_FRESH_MS, takeSnapshot } from "../metrics/mod.ts";
 * import { writeMetricsSnapshot } from "./metrics_store.ts";
 * const kv = await Deno.openKv(":memory:");
 * const metrics = createMetrics();
 * await writeMetricsSnapshot(kv, "host-a", 1, takeSnapshot(metrics.registry), METRICS_FRESH_MS);
 * kv.close();
 * ```
 *
 * @throws {RangeError} for a snapshot whose values do not fit a KV value
 * ({@linkcode KV_MAX_VALUE_BYTES}).
 */
export async function writeMetricsSnapshot(
  kv: Store,
  host: string,
  worker: number,
  snapshot: MetricsSnapshot,
  expireInMs: number,
): Promise<void> {
  if (snapshot.values.byteLength + SNAPSHOT_HEADROOM_BYTES > KV_MAX_VALUE_BYTES) {
    throw new RangeError(
      `Cannot store a metrics snapshot of ${snapshot.values.byteLength} bytes: KV values hold ${KV_MAX_VALUE_BYTES}`,
    );
  }
  const key = keys.metrics(host, worker);
  await commit(() => kv.atomic().set(key, snapshot, { expireIn: expireInMs }));
}

/** A snapshot as stored: whose it is. */
export interface StoredSnapshot {
  readonly host: string;
  readonly worker: number;
  readonly snapshot: MetricsSnapshot;
}

/**
 * Every worker's snapshot still in the store, by host then worker index (expired ones may linger
 * in a KV file: read `at`).
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { createMetrics, METRICS_FRESH_MS, takeSnapshot } from "../metrics/mod.ts";
 * import { readMetricsSnapshots, writeMetricsSnapshot } from "./metrics_store.ts";
 * const kv = await Deno.openKv(":memory:");
 * const snapshot = takeSnapshot(createMetrics().registry, 1_700_000_000_000);
 * await writeMetricsSnapshot(kv, "host-a", 1, snapshot, METRICS_FRESH_MS);
 * const [stored] = await readMetricsSnapshots(kv);
 * assert.equal(stored.snapshot.at, 1_700_000_000_000); // when host-a's worker 1 last published
 * kv.close();
 * ```
 */
export async function readMetricsSnapshots(kv: Store): Promise<StoredSnapshot[]> {
  const snapshots: StoredSnapshot[] = [];
  for await (const entry of kv.list<MetricsSnapshot>({ prefix: keys.metricsAll() })) {
    const key = parseKey(entry.key);
    if (key.kind === "metrics") {
      snapshots.push({ host: key.host, worker: key.worker, snapshot: entry.value });
    }
  }
  return snapshots;
}
