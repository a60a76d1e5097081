import assert from "node:assert/strict";
import {
  keys,
  KV_MAX_VALUE_BYTES,
  readMetricsSnapshots,
  writeMetricsSnapshot,
} from "../../lib/kv/mod.ts";
import { createMetrics, METRICS_FRESH_MS, takeSnapshot } from "../../lib/metrics/mod.ts";

Deno.test("writeMetricsSnapshot() keeps one snapshot per host and worker; readMetricsSnapshots() gives them back in order", async () => {
  const kv = await Deno.openKv(":memory:");
  try {
    const [zero, one, other] = [createMetrics(), createMetrics(), createMetrics()];
    zero.turns.inc("append");
    one.sampledTokens.add(42);
    other.turns.inc("start");
    await writeMetricsSnapshot(kv, "a", 0, takeSnapshot(zero.registry, 1), METRICS_FRESH_MS);
    await writeMetricsSnapshot(kv, "a", 1, takeSnapshot(one.registry, 2), METRICS_FRESH_MS);
    // Another host's worker 0: a snapshot of its own, not an overwrite of host a's.
    await writeMetricsSnapshot(kv, "b", 0, takeSnapshot(other.registry, 2), METRICS_FRESH_MS);
    zero.turns.inc("append");
    await writeMetricsSnapshot(kv, "a", 0, takeSnapshot(zero.registry, 3), METRICS_FRESH_MS);
    await kv.set(["metrics", "not-a-worker"], 1); // not a snapshot's key: ignored
    assert.deepEqual(await readMetricsSnapshots(kv), [
      { host: "a", worker: 0, snapshot: takeSnapshot(zero.registry, 3) },
      { host: "a", worker: 1, snapshot: takeSnapshot(one.registry, 2) },
      { host: "b", worker: 0, snapshot: takeSnapshot(other.registry, 2) },
    ]);
  } finally {
    kv.close();
  }
});

Deno.test("a full snapshot of the gateway's metrics (8 bytes a slot, every slot set) fits one KV value many times over", async () => {
  const kv = await Deno.openKv(":memory:");
  try {
    const metrics = createMetrics();
    metrics.registry.values.fill(-Number.MAX_VALUE / 3);
    const snapshot = takeSnapshot(metrics.registry);
    assert.equal(snapshot.values.byteLength, metrics.registry.values.length * 8);
    assert.ok(
      snapshot.values.byteLength <= KV_MAX_VALUE_BYTES / 16,
      `${snapshot.values.byteLength} bytes: room for the catalogue to grow many times over`,
    );
    await writeMetricsSnapshot(kv, "a", 7, snapshot, METRICS_FRESH_MS);
    assert.deepEqual((await kv.get(keys.metrics("a", 7))).value, snapshot);
  } finally {
    kv.close();
  }
});

Deno.test("writeMetricsSnapshot() refuses a snapshot too large for a KV value, writing nothing", async () => {
  const kv = await Deno.openKv(":memory:");
  try {
    const snapshot = {
      layout: "0000beef",
      at: 1,
      values: new Uint8Array(KV_MAX_VALUE_BYTES - 1000),
    };
    await assert.rejects(
      writeMetricsSnapshot(kv, "a", 0, snapshot, METRICS_FRESH_MS),
      new RangeError("Cannot store a metrics snapshot of 64536 bytes: KV values hold 65536"),
    );
    assert.equal((await readMetricsSnapshots(kv)).length, 0);
  } finally {
    kv.close();
  }
});
