/** Metrics: a catalogue, a registry counting into it, worker snapshots, Prometheus text. @module */
export * from "./catalogue.ts";
export * from "./registry.ts";
export * from "./exposition.ts";
export * from "./snapshot.ts";
export * from "./publisher.ts";
export * from "./memory.ts";
