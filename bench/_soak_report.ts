/**
 * What a soak found, how it prints, and which of its figures fail it.
 *
 * @module
 */
import type { RssSample } from "./_soak_gateways.ts";
import type { FaultKind } from "./_soak_engine.ts";

/** The figures of one soak. */
export interface SoakReport {
  readonly seconds: number;
  readonly agents: number;
  /** Episodes run (one session each), and those whose agent gave up on a turn. */
  readonly episodes: number;
  readonly unfinished: number;
  /** Live turns recorded in the episodes' sessions (read back through the trainer API). */
  readonly committed: number;
  /** Replies the agents accepted. */
  readonly accepted: number;
  readonly retried: number;
  readonly replayed: number;
  readonly lost: number;
  readonly unacknowledged: number;
  readonly halfWritten: number;
  readonly falseForks: number;
  readonly inexact: number;
  /** 500s, `api_error` stream events, refused requests and error lines the gateways printed. */
  readonly errors: readonly string[];
  readonly kills: number;
  /** The store (a KV file, or PostgreSQL), and how often the database was killed and restarted. */
  readonly store?: "kv" | "postgres";
  readonly databaseRestarts?: number;
  readonly restarts: number;
  readonly restartFailures: number;
  readonly engineCalls: number;
  readonly faults: Readonly<Record<FaultKind, number>>;
  /** Whole replies thrown away before the agent read them, so that it retried. */
  readonly repliesLost: number;
  /** Engine-side aborts the recorded turns resumed. */
  readonly aborts: number;
  readonly statuses: Readonly<Record<number, number>>;
  readonly connectionErrors: number;
  readonly brokenStreams: number;
  /** Milliseconds from a turn's first attempt to its accepted reply. */
  readonly latency: { readonly p50: number; readonly p99: number; readonly max: number };
  readonly rss: readonly RssSample[];
  readonly rssEverySeconds: number;
  /** Each gateway process's `MEMORY_BUDGET_MB`. */
  readonly budgetMb: number;
  /** How long agents started turns (the memory trend is read over its last five minutes). */
  readonly loadMs: number;
  /** Tokens of the last prompt of an episode: mean and largest. */
  readonly prompts: { readonly mean: number; readonly max: number };
  readonly kv: { readonly megabytes: number; readonly turns: number; readonly staleLeases: number };
  /** The first problems found, described. */
  readonly problems: readonly string[];
}

/** Why the soak failed; empty when it passed. */
export function soakFailures(report: SoakReport): string[] {
  const failures: string[] = [];
  const zero = {
    lost: report.lost,
    "half-written": report.halfWritten,
    "false forks": report.falseForks,
    inexact: report.inexact,
    unacknowledged: report.unacknowledged,
    unfinished: report.unfinished,
    errors: report.errors.length,
    "failed restarts": report.restartFailures,
  };
  for (const [name, count] of Object.entries(zero)) {
    if (count > 0) failures.push(`${name}: ${count}`);
  }
  if (report.committed === 0) failures.push("no turn was committed");
  return failures;
}

/** The report as the soak prints it. */
export function formatReport(report: SoakReport): string {
  const faults = Object.entries(report.faults).map(([kind, n]) => `${kind} ${n}`).join(", ");
  const statuses = Object.entries(report.statuses).map(([code, n]) => `${code}×${n}`).join(" ");
  // Every 30 s in the table, however often it was sampled.
  const every = Math.max(1, Math.round(30 / report.rssEverySeconds));
  const series = (pick: (sample: RssSample) => number | null) =>
    report.rss.filter((_, i) => i % every === 0).map((sample) =>
      String(pick(sample) ?? "-").padStart(5)
    ).join("");
  const lines = [
    `soak: ${report.seconds} s, ${report.agents} agents, ${report.episodes} episodes ` +
    `(${report.unfinished} unfinished), ` +
    (report.store === "postgres"
      ? `2 gateway hosts on one PostgreSQL store, restarted ${report.databaseRestarts} times`
      : "2 gateway processes on one KV file"),
    `  turns committed  ${report.committed}  (accepted by the agents: ${report.accepted})`,
    `  retried          ${report.retried}  (attempts sent again with the same body)`,
    `  replayed         ${report.replayed}  (retries answered from the recorded turn)`,
    `  lost             ${report.lost}  (accepted replies not in the live chain)`,
    `  half-written     ${report.halfWritten}  (KV entries of no consistent turn)`,
    `  false forks      ${report.falseForks}  (sessions not one chain of the accepted turns)`,
    `  inexact          ${report.inexact}  (turns not token-exact against the engine, T1/T2)`,
    `  unacknowledged   ${report.unacknowledged}  (recorded turns no agent accepted)`,
    `  errors           ${report.errors.length}  (500s, api_error events, refusals, error logs)`,
    `  latency per turn p50 ${report.latency.p50} ms, p99 ${report.latency.p99} ms, ` +
    `max ${report.latency.max} ms (first attempt to accepted reply)`,
    `  kills ${report.kills} (SIGKILL), restarts ${report.restarts}` +
    (report.restartFailures > 0 ? `, failed restarts ${report.restartFailures}` : ""),
    `  engine: ${report.engineCalls} calls; faults ${faults}; ` +
    `${report.aborts} aborts resumed in recorded turns`,
    `  agents: ${report.repliesLost} whole replies thrown away before reading (retried); ` +
    `last prompt of an episode ${report.prompts.mean} tokens on average, ${report.prompts.max} at most`,
    `  agents saw: ${statuses}; ${report.connectionErrors} connection errors, ` +
    `${report.brokenStreams} broken streams`,
    `  ${report.store === "postgres" ? "store" : "KV"}: ${report.kv.megabytes} MB, ` +
    `${report.kv.turns} turn records, ` +
    `${report.kv.staleLeases} leases left by killed processes`,
    `  RSS MiB every ${every * report.rssEverySeconds} s, the stable process, then the killed one:`,
    `   ${series((s) => s.stable)}`,
    `   ${series((s) => s.killed)}`,
    `  memory: ${memorySummary(report)}`,
  ];
  if (report.errors.length > 0) {
    const counts = new Map<string, number>();
    for (const error of report.errors) counts.set(error, (counts.get(error) ?? 0) + 1);
    lines.push("errors (distinct, with counts):");
    for (const [error, count] of [...counts].slice(0, 10)) lines.push(`  ${count}× ${error}`);
  }
  if (report.problems.length > 0) lines.push("problems:", ...report.problems.slice(0, 20));
  return lines.join("\n");
}

/**
 * The stable process's RSS over the last five minutes of load (the second half of a shorter soak;
 * every sample, not only the table's): its rise a minute (the least-squares slope, as a share of
 * its mean) and its most.
 */
export function rssTrend(
  rss: readonly RssSample[],
  loadMs: number,
): { readonly percentPerMinute: number; readonly maxMiB: number; readonly fromMs: number } | null {
  const samples = rss.filter((sample) => sample.stable !== null && sample.atMs <= loadMs);
  const end = samples.at(-1)?.atMs ?? 0;
  const fromMs = Math.max(end - 300_000, end / 2);
  const window = samples.filter((sample) => sample.atMs >= fromMs);
  if (window.length < 3) return null;
  const xs = window.map((sample) => sample.atMs / 60_000);
  const ys = window.map((sample) => sample.stable!);
  const mean = (values: number[]) => values.reduce((sum, v) => sum + v, 0) / values.length;
  const [mx, my] = [mean(xs), mean(ys)];
  let covariance = 0;
  let variance = 0;
  for (let i = 0; i < xs.length; i++) {
    covariance += (xs[i] - mx) * (ys[i] - my);
    variance += (xs[i] - mx) ** 2;
  }
  return { percentPerMinute: (100 * covariance / variance) / my, maxMiB: Math.max(...ys), fromMs };
}

function memorySummary(report: SoakReport): string {
  const trend = rssTrend(report.rss, report.loadMs);
  if (trend === null) {
    return `budget ${report.budgetMb} MiB a process (too few samples for a trend)`;
  }
  return `budget ${report.budgetMb} MiB a process; the stable process from ${
    Math.round(trend.fromMs / 1000)
  } s to the end of the load: RSS at most ${trend.maxMiB} MiB, rising ${
    trend.percentPerMinute.toFixed(2)
  }% a minute (every ${report.rssEverySeconds} s)`;
}

/** The value below which `fraction` of `values` lie (0 when there are none). */
export function percentile(values: readonly number[], fraction: number): number {
  if (values.length === 0) return 0;
  const sorted = [...values].sort((a, b) => a - b);
  return sorted[Math.min(sorted.length - 1, Math.floor(sorted.length * fraction))];
}
