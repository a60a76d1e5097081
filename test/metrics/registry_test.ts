import assert from "node:assert/strict";
import { CATALOGUE, createMetrics, MetricsRegistry } from "../../lib/metrics/mod.ts";
import { SMALL } from "./_small.ts";

Deno.test("createMetrics() lays out a slot per series, the last label fastest, and a histogram's buckets, +Inf and sum", () => {
  const { registry } = createMetrics(SMALL);
  assert.deepEqual(
    registry.layout.map(({ spec, offset, series, width }) => [spec.name, offset, series, width]),
    [
      ["t_requests_total", 0, 6, 1],
      ["t_level", 6, 1, 1],
      ["t_latency_seconds", 7, 2, 4],
    ],
  );
  assert.equal(registry.values.length, 15);
});

Deno.test("a counter adds to the series of its label values and no other", () => {
  const metrics = createMetrics(SMALL);
  metrics.requests.inc("b", "late");
  metrics.requests.inc("b", "late");
  metrics.requests.add(2.5, "a", "ok");
  metrics.requests.add(0, "a", "error");
  metrics.level.set(7);
  metrics.level.add(-2);
  assert.deepEqual(
    Array.from(metrics.registry.values),
    [2.5, 0, 0, 0, 0, 2, 5, 0, 0, 0, 0, 0, 0, 0, 0],
  );
});

Deno.test("a histogram counts an observation in the first bucket it does not exceed, past the last in +Inf, and sums it", () => {
  const metrics = createMetrics(SMALL);
  metrics.latency.observe(0.1, "a"); // on the bound: le="0.1"
  metrics.latency.observe(0.5, "a");
  metrics.latency.observe(0, "a");
  metrics.latency.observe(7, "b"); // past 1: +Inf only
  metrics.latency.observe(NaN, "b"); // not an observation
  assert.deepEqual(
    Array.from(metrics.registry.values.subarray(7)),
    [2, 1, 0, 0.6, 0, 0, 1, 7],
  );
});

Deno.test("a label value outside its set is refused, naming the metric and the label; a counter refuses to go down", () => {
  const metrics = createMetrics(SMALL);
  const loose = metrics.requests as unknown as { inc(...values: string[]): void };
  assert.throws(
    () => loose.inc("a", "gone"),
    new RangeError('Cannot count t_requests_total: "gone" is not a value of label "outcome"'),
  );
  assert.throws(
    () => loose.inc(),
    new RangeError('Cannot count t_requests_total: "undefined" is not a value of label "kind"'),
  );
  assert.throws(
    () => metrics.requests.add(-1, "a", "ok"),
    new RangeError("Cannot add -1 to a counter: it only goes up"),
  );
  assert.deepEqual(Array.from(metrics.registry.values), new Array(15).fill(0));
});

Deno.test("the start-time gauge holds the registry's creation time, in seconds", () => {
  const metrics = createMetrics(CATALOGUE, 1_700_000_000_500);
  const start = metrics.registry.layout.find((l) => l.spec.name === CATALOGUE.startTime.name)!;
  assert.equal(metrics.registry.values[start.offset], 1_700_000_000.5);
  assert.equal(
    metrics.registry.values.filter((value) => value !== 0).length,
    1,
    "nothing else is set",
  );
});

Deno.test("registries of one catalogue share a fingerprint; another catalogue has another", () => {
  assert.equal(createMetrics().registry.fingerprint, new MetricsRegistry(CATALOGUE).fingerprint);
  assert.match(createMetrics().registry.fingerprint, /^[0-9a-f]{8}$/);
  assert.notEqual(createMetrics(SMALL).registry.fingerprint, createMetrics().registry.fingerprint);
  const moreBuckets = { ...SMALL, latency: { ...SMALL.latency, buckets: [0.1, 1, 10] } };
  assert.notEqual(
    createMetrics(moreBuckets).registry.fingerprint,
    createMetrics(SMALL).registry.fingerprint,
  );
});

Deno.test("a metric of more than three labels, or one named registry, is refused", () => {
  const labels = [["a", ["x"]], ["b", ["x"]], ["c", ["x"]], ["d", ["x"]]] as const;
  assert.throws(
    () => new MetricsRegistry({ wide: { name: "t_wide", help: "W.", type: "gauge", labels } }),
    new RangeError('Metric "t_wide" has more than 3 labels'),
  );
  assert.throws(
    () => createMetrics({ registry: SMALL.level }),
    new RangeError('A catalogue cannot name a metric "registry"'),
  );
});
