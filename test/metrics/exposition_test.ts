import assert from "node:assert/strict";
import {
  createMetrics,
  escapeHelp,
  escapeLabelValue,
  formatNumber,
  renderExposition,
  workerFamilies,
} from "../../lib/metrics/mod.ts";
import { parseExposition } from "../_prometheus.ts";
import { SMALL } from "./_small.ts";

Deno.test("renderExposition() writes a small registry exactly: help, type, every series, cumulative buckets, sum and count", () => {
  const metrics = createMetrics(SMALL);
  metrics.requests.inc("a", "ok");
  metrics.requests.add(3, "b", "late");
  metrics.level.set(1.5);
  metrics.latency.observe(0.05, "a");
  metrics.latency.observe(0.5, "a");
  metrics.latency.observe(2, "a");
  const text = renderExposition(
    workerFamilies(metrics.registry, [{ host: "h", worker: 0, values: metrics.registry.values }]),
  );
  assert.equal(
    text,
    [
      "# HELP t_requests_total Requests.",
      "# TYPE t_requests_total counter",
      't_requests_total{host="h",worker="0",kind="a",outcome="ok"} 1',
      't_requests_total{host="h",worker="0",kind="a",outcome="error"} 0',
      't_requests_total{host="h",worker="0",kind="a",outcome="late"} 0',
      't_requests_total{host="h",worker="0",kind="b",outcome="ok"} 0',
      't_requests_total{host="h",worker="0",kind="b",outcome="error"} 0',
      't_requests_total{host="h",worker="0",kind="b",outcome="late"} 3',
      "# HELP t_level Level.",
      "# TYPE t_level gauge",
      't_level{host="h",worker="0"} 1.5',
      "# HELP t_latency_seconds Latency.",
      "# TYPE t_latency_seconds histogram",
      't_latency_seconds_bucket{host="h",worker="0",kind="a",le="0.1"} 1',
      't_latency_seconds_bucket{host="h",worker="0",kind="a",le="1"} 2',
      't_latency_seconds_bucket{host="h",worker="0",kind="a",le="+Inf"} 3',
      't_latency_seconds_sum{host="h",worker="0",kind="a"} 2.55',
      't_latency_seconds_count{host="h",worker="0",kind="a"} 3',
      't_latency_seconds_bucket{host="h",worker="0",kind="b",le="0.1"} 0',
      't_latency_seconds_bucket{host="h",worker="0",kind="b",le="1"} 0',
      't_latency_seconds_bucket{host="h",worker="0",kind="b",le="+Inf"} 0',
      't_latency_seconds_sum{host="h",worker="0",kind="b"} 0',
      't_latency_seconds_count{host="h",worker="0",kind="b"} 0',
      "",
    ].join("\n"),
  );
});

Deno.test("renderExposition() escapes backslash and line feed in help, and quote too in label values; a parser reads them back", async () => {
  const value = 'C:\\dir "x"\nnext';
  const text = renderExposition([{
    name: "t_paths",
    help: "Paths \\ on\ntwo lines.",
    type: "gauge",
    series: [{ labels: [["path", value]], value: 2 }],
  }]);
  assert.equal(
    text,
    [
      "# HELP t_paths Paths \\\\ on\\ntwo lines.",
      "# TYPE t_paths gauge",
      't_paths{path="C:\\\\dir \\"x\\"\\nnext"} 2',
      "",
    ].join("\n"),
  );
  const parsed = await parseExposition(text);
  assert.deepEqual(parsed.t_paths.data, [{ labels: { path: value }, value: 2 }]);
});

Deno.test("escapeHelp() and escapeLabelValue() leave other text alone", () => {
  assert.equal(escapeHelp('Say "hi", {x}.'), 'Say "hi", {x}.');
  assert.equal(escapeLabelValue("grp_0123abcd{}=,"), "grp_0123abcd{}=,");
});

Deno.test("formatNumber() spells infinities and NaN as Prometheus does, and numbers as Go reads them", () => {
  assert.deepEqual(
    [Infinity, -Infinity, NaN, 0, -0.5, 1e21, 1e-7, 0.1 + 0.2, 12345678].map(formatNumber),
    ["+Inf", "-Inf", "NaN", "0", "-0.5", "1e+21", "1e-7", "0.30000000000000004", "12345678"],
  );
});

Deno.test("renderExposition() writes a family with no series as its help and type alone", () => {
  assert.equal(
    renderExposition([{ name: "t_groups", help: "Groups.", type: "gauge", series: [] }]),
    "# HELP t_groups Groups.\n# TYPE t_groups gauge\n",
  );
  assert.equal(renderExposition([]), "");
});
