/**
 * Every metric the gateway exposes on `/metrics`, in one place: name, help, type, labels and
 * buckets. A label takes its values from a closed set listed here, never from a client's string
 * (no model names, session ids or tool names), so every series exists from start-up and their
 * number is fixed. The only exception is {@linkcode GROUP_TOOL_TURNS}, read from KV at scrape
 * time and labelled with server-generated group ids.
 *
 * @module
 */
import { ERROR_TABLE, type ErrorCode } from "../errors/mod.ts";

/** What a metric is. */
export type MetricType = "counter" | "gauge" | "histogram";

/** One label of a metric: its name and every value it may take. */
export type LabelSpec = readonly [name: string, values: readonly string[]];

/** A metric: `name` carries the `rollout_gateway_` prefix, and `_total` for a counter. */
export interface MetricSpec {
  readonly name: string;
  readonly help: string;
  readonly type: MetricType;
  /** At most three, in the order their values are passed when counting. */
  readonly labels: readonly LabelSpec[];
  /** A histogram's upper bounds, ascending (`+Inf` is implied). */
  readonly buckets?: readonly number[];
}

/** How a request was routed (the session layer's `RouteKind`). */
export const ROUTE_KINDS = [
  "append",
  "replay",
  "rewind",
  "realign",
  "resume",
  "start",
  "wipe",
  "subagent",
  "side",
] as const;

/** Flags a recorded turn may carry. */
export const TURN_FLAGS = [
  "ill_formed",
  "roundtrip_mismatch",
  "masked",
  "engine_aborted",
  "stream_diverged",
  "engine_failover",
  "session_resent",
  "routing_mismatch",
] as const;

/** A flag of a recorded turn. */
export type TurnFlag = typeof TURN_FLAGS[number];

/**
 * The engine workers the gateway places generations on (`ENGINE_PLACEMENT=gateway`), by index in
 * `ENGINE_WORKERS`: none in the catalogue itself; {@linkcode catalogueFor} names the configured
 * ones, the same in every process of one configuration.
 */
const ENGINE_WORKER_LABELS: readonly string[] = [];

/** The leases a request waits for: a session's, a chain's, any other. */
export const LEASE_KINDS = ["session", "chain", "other"] as const;

/** The phases of a rollout job. */
export const ROLLOUT_PHASES = [
  "queued",
  "booting",
  "agent",
  "evaluating",
  "done",
  "failed",
  "aborted",
] as const;

/** Sandbox backends; `other` for a backend of another name (a test's). */
export const SANDBOX_BACKENDS = ["local", "e2b", "other"] as const;

/** How a sandbox boot ended. */
export const BOOT_OUTCOMES = ["ok", "unavailable", "bad_repo", "cancelled", "error"] as const;

/** How an evaluation ended: the evidence's reason, or `error` when it threw. */
export const EVALUATION_OUTCOMES = [
  "passed",
  "tests_failed",
  "timeout",
  "patch_failed",
  "patch_rejected",
  "pre_command_failed",
  "test_patch_failed",
  "no_reward",
  "runner_failed",
  "no_tests_ran",
  "error",
] as const;

/** Every error code (`ERROR_TABLE`). */
export const ERROR_CODES = Object.keys(ERROR_TABLE) as readonly ErrorCode[];

/**
 * The caches of a process whose memory and use `/metrics` shows: the main isolate's, its
 * tokenizer's `sections`, and the tokenizer workers' `worker_sections` (summed over the workers,
 * as each last answered).
 */
export const CACHE_NAMES = [
  "chains",
  "identities",
  "recurring_fields",
  "settings",
  "images",
  "sections",
  "worker_sections",
] as const;

/** A cache of {@linkcode CACHE_NAMES}. */
export type CacheName = typeof CACHE_NAMES[number];

/** What `Deno.memoryUsage()` says of a process: its resident set, and its main isolate's heap. */
export const MEMORY_KINDS = ["rss", "heap_used", "heap_total", "external"] as const;

/** The statistics of a group's tool turns. */
export const GROUP_STATS = ["mean", "min", "max"] as const;

/** Engine calls last from milliseconds (the scripted engine) to minutes (long generations). */
const ENGINE_BUCKETS = [
  0.005,
  0.01,
  0.025,
  0.05,
  0.1,
  0.25,
  0.5,
  1,
  2.5,
  5,
  10,
  30,
  60,
  120,
  300,
];
/** The gateway's own part of a turn: a few milliseconds, more when it waits for a lease. */
const GATEWAY_BUCKETS = [0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10];
/** Lease waits back off from 5 ms to 250 ms, for at most `LOCK_WAIT_MS` (30 s by default). */
const LEASE_BUCKETS = [0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30];
/** Local sandboxes boot in a fraction of a second; E2B ones in seconds. */
const BOOT_BUCKETS = [0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 120];

const spec = <const S extends MetricSpec>(metric: S): S => metric;

/** The metrics every gateway process keeps, by the name the code counts them with. */
export const CATALOGUE = {
  turns: spec({
    name: "rollout_gateway_turns_total",
    help: "Turns answered, by how the request was routed: recorded turns, and replays (a retry " +
      "answered from its recorded turn, nothing generated).",
    type: "counter",
    labels: [["route", ROUTE_KINDS]],
  }),
  promptTokens: spec({
    name: "rollout_gateway_prompt_tokens_total",
    help: "Prompt tokens of recorded turns (what the engine read).",
    type: "counter",
    labels: [],
  }),
  cachedTokens: spec({
    name: "rollout_gateway_cached_tokens_total",
    help: "Prompt tokens of recorded turns the engine reported served from its prefix cache.",
    type: "counter",
    labels: [],
  }),
  sampledTokens: spec({
    name: "rollout_gateway_sampled_tokens_total",
    help: "Tokens sampled by the engine in recorded turns.",
    type: "counter",
    labels: [],
  }),
  turnFlags: spec({
    name: "rollout_gateway_turn_flags_total",
    help: "Recorded turns carrying each flag (ill_formed: a tool call that does not parse).",
    type: "counter",
    labels: [["flag", TURN_FLAGS]],
  }),
  turnCancels: spec({
    name: "rollout_gateway_turn_cancels_total",
    help: "Turns cancelled because the client left: engine request aborted, nothing recorded.",
    type: "counter",
    labels: [],
  }),
  engineAborts: spec({
    name: "rollout_gateway_engine_aborts_total",
    help: "Generations the engine aborted (a pause for a weight update), resumed or not.",
    type: "counter",
    labels: [],
  }),
  engineResumes: spec({
    name: "rollout_gateway_engine_resumes_total",
    help: "Aborted generations resubmitted as prompt plus partial output.",
    type: "counter",
    labels: [],
  }),
  enginePromptTokens: spec({
    name: "rollout_gateway_engine_prompt_tokens_total",
    help: "Prompt tokens of generations the gateway placed, by engine worker (its index in " +
      "ENGINE_WORKERS).",
    type: "counter",
    labels: [["engine_worker", ENGINE_WORKER_LABELS]],
  }),
  engineCachedTokens: spec({
    name: "rollout_gateway_engine_cached_tokens_total",
    help: "Prompt tokens of placed generations the worker served from its prefix cache.",
    type: "counter",
    labels: [["engine_worker", ENGINE_WORKER_LABELS]],
  }),
  enginePrefillTokens: spec({
    name: "rollout_gateway_engine_prefill_tokens_total",
    help: "Prompt tokens of placed generations the worker computed (prompt less cached).",
    type: "counter",
    labels: [["engine_worker", ENGINE_WORKER_LABELS]],
  }),
  engineWorkerFailures: spec({
    name: "rollout_gateway_engine_worker_failures_total",
    help: "Times an engine worker was taken out of placement: a failed generation or health check.",
    type: "counter",
    labels: [["engine_worker", ENGINE_WORKER_LABELS]],
  }),
  engineFailovers: spec({
    name: "rollout_gateway_engine_failovers_total",
    help: "Generations that went on on another engine worker after theirs failed.",
    type: "counter",
    labels: [],
  }),
  engineSessionResends: spec({
    name: "rollout_gateway_engine_session_resends_total",
    help: "Turns an engine session could not continue (its prompt length differed, or it was " +
      "gone), sent again whole.",
    type: "counter",
    labels: [],
  }),
  routingMismatchRows: spec({
    name: "rollout_gateway_routing_mismatch_rows_total",
    help: "Rows of routed experts an engine reported again for positions a chain had recorded " +
      "(a recompute) that differed from the record.",
    type: "counter",
    labels: [],
  }),
  routedExpertRows: spec({
    name: "rollout_gateway_routed_expert_rows_total",
    help: "Rows of routed experts recorded (one a forwarded token, R3).",
    type: "counter",
    labels: [],
  }),
  treeExportTokens: spec({
    name: "rollout_gateway_tree_export_tokens_total",
    help: "Tokens of the samples exported as prefix trees (format=tree): in the trees' nodes, " +
      "and in the flat samples they stand for.",
    type: "counter",
    labels: [["counted", ["tree", "flat"]]],
  }),
  engineSeconds: spec({
    name: "rollout_gateway_engine_seconds",
    help: "Engine time of a recorded turn as the gateway saw it (every call of the generation).",
    type: "histogram",
    labels: [],
    buckets: ENGINE_BUCKETS,
  }),
  gatewaySeconds: spec({
    name: "rollout_gateway_gateway_seconds",
    help: "A recorded turn's time less its engine time: lease waits, routing, rendering, commit.",
    type: "histogram",
    labels: [],
    buckets: GATEWAY_BUCKETS,
  }),
  kvCommitRetries: spec({
    name: "rollout_gateway_kv_commit_retries_total",
    help: "KV commits of leases, chains and turns tried again because the database was locked " +
      "(another process on the KV file).",
    type: "counter",
    labels: [],
  }),
  leaseWaits: spec({
    name: "rollout_gateway_lease_waits_total",
    help: "Requests that found a lease held and waited for it.",
    type: "counter",
    labels: [["lease", LEASE_KINDS]],
  }),
  leaseWaitSeconds: spec({
    name: "rollout_gateway_lease_wait_seconds",
    help: "How long a request waited for a held lease (until taken, timed out or abandoned).",
    type: "histogram",
    labels: [["lease", LEASE_KINDS]],
    buckets: LEASE_BUCKETS,
  }),
  rolloutJobs: spec({
    name: "rollout_gateway_rollout_jobs_total",
    help: "Rollout jobs moved into each phase by this process (queued: submitted or handed back).",
    type: "counter",
    labels: [["phase", ROLLOUT_PHASES]],
  }),
  rolloutRunning: spec({
    name: "rollout_gateway_rollout_jobs_running",
    help: "Rollout jobs this process runs now.",
    type: "gauge",
    labels: [],
  }),
  sandboxBoots: spec({
    name: "rollout_gateway_sandbox_boots_total",
    help: "Sandbox boots (agents' and evaluations'), by backend and outcome.",
    type: "counter",
    labels: [["backend", SANDBOX_BACKENDS], ["outcome", BOOT_OUTCOMES]],
  }),
  sandboxBootSeconds: spec({
    name: "rollout_gateway_sandbox_boot_seconds",
    help: "How long a sandbox boot took, whatever its outcome.",
    type: "histogram",
    labels: [["backend", SANDBOX_BACKENDS]],
    buckets: BOOT_BUCKETS,
  }),
  evaluations: spec({
    name: "rollout_gateway_evaluations_total",
    help: "Evaluations (/evaluate and rollouts' grading), by the evidence's reason; error when " +
      "the evaluation threw (sandbox unavailable, judger failed, cancelled).",
    type: "counter",
    labels: [["outcome", EVALUATION_OUTCOMES]],
  }),
  errors: spec({
    name: "rollout_gateway_errors_total",
    help: "Errors answered, by code: HTTP error responses, and error events of started streams.",
    type: "counter",
    labels: [["code", ERROR_CODES]],
  }),
  processMemory: spec({
    name: "rollout_gateway_process_memory_bytes",
    help: "The process's memory when scraped: rss (the whole process, every isolate), and its " +
      "main isolate's heap_used, heap_total and external (array buffers and the like).",
    type: "gauge",
    labels: [["kind", MEMORY_KINDS]],
  }),
  cacheBytes: spec({
    name: "rollout_gateway_cache_bytes",
    help: "Bytes of memory a cache of the process holds, as the cache estimates them.",
    type: "gauge",
    labels: [["cache", CACHE_NAMES]],
  }),
  cacheHeld: spec({
    name: "rollout_gateway_cache_held",
    help: "What a cache holds, in its own unit (chains: tokens; the others: characters).",
    type: "gauge",
    labels: [["cache", CACHE_NAMES]],
  }),
  cacheCapacity: spec({
    name: "rollout_gateway_cache_capacity",
    help: "The most bytes a cache holds: its share of MEMORY_BUDGET_MB.",
    type: "gauge",
    labels: [["cache", CACHE_NAMES]],
  }),
  cacheLookups: spec({
    name: "rollout_gateway_cache_lookups_total",
    help: "Lookups in a cache: hit (found), miss (computed or read from the store instead).",
    type: "counter",
    labels: [["cache", CACHE_NAMES], ["result", ["hit", "miss"]]],
  }),
  startTime: spec({
    name: "rollout_gateway_start_time_seconds",
    help: "When this process started, in seconds since the epoch (its counters start at 0 then).",
    type: "gauge",
    labels: [],
  }),
} as const;

/**
 * The catalogue with its per-engine-worker metrics labelled for `engineWorkers` workers (`"0"`,
 * `"1"`…, their indexes in `ENGINE_WORKERS`).
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { catalogueFor } from "./catalogue.ts";
 * const catalogue = catalogueFor({ engineWorkers: 2 });
 * assert.deepEqual(catalogue.enginePromptTokens.labels, [["engine_worker", ["0", "1"]]]);
 * ```
 */
export function catalogueFor(options: { readonly engineWorkers: number }): typeof CATALOGUE {
  const labels = Array.from({ length: options.engineWorkers }, (_, i) => String(i));
  const perWorker = <S extends MetricSpec>(spec: S): S => ({
    ...spec,
    labels: [["engine_worker", labels]],
  });
  return {
    ...CATALOGUE,
    enginePromptTokens: perWorker(CATALOGUE.enginePromptTokens),
    engineCachedTokens: perWorker(CATALOGUE.engineCachedTokens),
    enginePrefillTokens: perWorker(CATALOGUE.enginePrefillTokens),
    engineWorkerFailures: perWorker(CATALOGUE.engineWorkerFailures),
  };
}

/** The catalogue's shape: metrics by the name code uses. */
export type Catalogue = Readonly<Record<string, MetricSpec>>;

/**
 * Tool turns per finished job of the newest rollout groups (turns whose reply carried tool
 * calls, over a group's `done` jobs). Read from KV at scrape time, the same from every process,
 * so it carries no `worker` label; `group` is a server-generated id (`grp_` and 24 hex digits).
 */
export const GROUP_TOOL_TURNS = spec({
  name: "rollout_gateway_group_tool_turns",
  help: "Tool turns per finished job of a rollout group (the newest groups): mean, min, max.",
  type: "gauge",
  labels: [["group", []], ["stat", GROUP_STATS]],
});

/** Groups {@linkcode GROUP_TOOL_TURNS} covers, the newest first. */
export const GROUP_METRICS_LIMIT = 50;
