import assert from "node:assert/strict";
import {
  createMetrics,
  METRICS_FRESH_MS,
  renderExposition,
  snapshotValues,
  takeSnapshot,
  workerFamilies,
  workersToShow,
} from "../../lib/metrics/mod.ts";
import { SMALL } from "./_small.ts";

Deno.test("takeSnapshot() copies the registry: read back, it holds the values at that moment", () => {
  const metrics = createMetrics(SMALL);
  metrics.requests.add(4, "b", "error");
  metrics.latency.observe(0.25, "b");
  const snapshot = takeSnapshot(metrics.registry, 1_000);
  metrics.requests.inc("a", "ok"); // after the snapshot
  assert.equal(snapshot.at, 1_000);
  assert.equal(snapshot.layout, metrics.registry.fingerprint);
  assert.equal(snapshot.values.byteLength, 15 * 8);
  const values = snapshotValues(createMetrics(SMALL).registry, structuredClone(snapshot));
  assert.deepEqual(Array.from(values!), [0, 0, 0, 0, 4, 0, 0, 0, 0, 0, 0, 0, 1, 0, 0.25]);
});

Deno.test("snapshotValues() reads no snapshot of another layout or size", () => {
  const metrics = createMetrics(SMALL);
  const snapshot = takeSnapshot(metrics.registry);
  assert.equal(snapshotValues(createMetrics().registry, snapshot), null);
  assert.equal(
    snapshotValues(metrics.registry, { ...snapshot, values: snapshot.values.slice(8) }),
    null,
  );
  assert.equal(snapshotValues(metrics.registry, { ...snapshot, layout: "0000beef" }), null);
});

Deno.test("workersToShow() shows this worker live and the others' fresh snapshots of its layout, any host's, by host and index", () => {
  const now = 1_000_000;
  const self = createMetrics(SMALL);
  self.level.set(10);
  const snapshotOf = (level: number, at: number) => {
    const other = createMetrics(SMALL);
    other.level.set(level);
    return takeSnapshot(other.registry, at);
  };
  const snapshots = [
    { host: "a", worker: 3, snapshot: snapshotOf(3, now - 1_000) },
    // This worker's own, older than its live values.
    { host: "a", worker: 0, snapshot: snapshotOf(99, now) },
    { host: "a", worker: 1, snapshot: snapshotOf(1, now - METRICS_FRESH_MS) },
    // Another host's worker 0: a worker of its own.
    { host: "b", worker: 0, snapshot: snapshotOf(7, now) },
    { host: "a", worker: 2, snapshot: snapshotOf(2, now - METRICS_FRESH_MS - 1) }, // stopped
    { host: "a", worker: 4, snapshot: takeSnapshot(createMetrics().registry, now) }, // another build
  ];
  const shown = workersToShow(self.registry, { host: "a", worker: 0 }, snapshots, now);
  assert.deepEqual(
    shown.map(({ host, worker, values }) => [host, worker, values[6]]),
    [["a", 0, 10], ["a", 1, 1], ["a", 3, 3], ["b", 0, 7]],
  );
  assert.equal(shown[0].values, self.registry.values, "live, not a copy");
});

Deno.test("workerFamilies() labels each worker's series with its host and index, first", () => {
  const [zero, one] = [createMetrics(SMALL), createMetrics(SMALL)];
  zero.level.set(1);
  one.level.set(2);
  one.latency.observe(5, "a");
  const families = workerFamilies(zero.registry, [
    { host: "h", worker: 0, values: zero.registry.values },
    { host: "h", worker: 1, values: one.registry.values },
  ]);
  const text = renderExposition(families.filter((family) => family.name !== "t_requests_total"));
  assert.equal(
    text,
    [
      "# HELP t_level Level.",
      "# TYPE t_level gauge",
      't_level{host="h",worker="0"} 1',
      't_level{host="h",worker="1"} 2',
      "# HELP t_latency_seconds Latency.",
      "# TYPE t_latency_seconds histogram",
      ...["0", "1"].flatMap((worker) =>
        ["a", "b"].flatMap((kind) => {
          const n = worker === "1" && kind === "a" ? 1 : 0;
          const at = `host="h",worker="${worker}",kind="${kind}"`;
          return [
            `t_latency_seconds_bucket{${at},le="0.1"} 0`,
            `t_latency_seconds_bucket{${at},le="1"} 0`,
            `t_latency_seconds_bucket{${at},le="+Inf"} ${n}`,
            `t_latency_seconds_sum{${at}} ${n * 5}`,
            `t_latency_seconds_count{${at}} ${n}`,
          ];
        })
      ),
      "",
    ].join("\n"),
  );
});
