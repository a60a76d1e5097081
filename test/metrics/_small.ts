/**
 * A small catalogue for the metrics tests: a counter with two labels, a gauge with none, a
 * histogram with one label and two buckets.
 *
 * @module
 */
import type { Catalogue } from "../../lib/metrics/mod.ts";

export const SMALL = {
  requests: {
    name: "t_requests_total",
    help: "Requests.",
    type: "counter",
    labels: [["kind", ["a", "b"]], ["outcome", ["ok", "error", "late"]]],
  },
  level: { name: "t_level", help: "Level.", type: "gauge", labels: [] },
  latency: {
    name: "t_latency_seconds",
    help: "Latency.",
    type: "histogram",
    labels: [["kind", ["a", "b"]]],
    buckets: [0.1, 1],
  },
} as const satisfies Catalogue;
