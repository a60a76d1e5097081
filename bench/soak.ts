/**
 * `deno task soak [--duration SECONDS] [--agents N] [--seed N] [--store kv|postgres]`: agents
 * running Claude-Code-sized episodes against two gateway processes on one store for a while, one
 * process SIGKILLed and restarted every few seconds, the engine failing on a share of its calls
 * (503s, hangs past `ENGINE_TIMEOUT_MS`, connections dropped mid-generation, slow generations,
 * engine-side aborts the gateway resumes). The store is a KV file, or with `--store postgres` a
 * throwaway PostgreSQL cluster that is also killed (`pg_ctl stop -m immediate`) and started again
 * every 20–40 s, the two gateways then running as two hosts (each its own folder and `HOST_ID`).
 * At the end every episode is checked against what was recorded (trainer API) and the store is
 * scanned; the soak fails when a turn was lost, half-written, forked or not token-exact.
 * `SOAK_DURATION_S`, `SOAK_AGENTS`, `SOAK_SEED` and `SOAK_STORE` work as the flags do.
 *
 * @module
 */
import postgres from "postgres";
import { defaultTokenizerPath } from "../lib/config/mod.ts";
import { defaultMemoryBudgetMb, heapFlags, machineMemory, memoryShares } from "../lib/cache/mod.ts";
import { openStore } from "../lib/kv/mod.ts";
import { sleep } from "../lib/timing/mod.ts";
import { type PostgresCluster, startPostgres } from "../test/_postgres.ts";
import { loadTokenizer } from "../lib/tokenizer/mod.ts";
import { ADMIN_TOKEN } from "../test/process/_gateway_process.ts";
import { seeded } from "./_random.ts";
import { checkChains } from "./_soak_chains.ts";
import { claudeCodeShape, newClientStats, runAgent } from "./_soak_client.ts";
import { DEFAULT_FAULTS, type FaultMix, startSoakEngine } from "./_soak_engine.ts";
import { type GatewayPair, startGatewayPair } from "./_soak_gateways.ts";
import { scanKv } from "./_soak_kv_scan.ts";
import { formatReport, percentile, soakFailures, type SoakReport } from "./_soak_report.ts";

export { formatReport, soakFailures, type SoakReport };

/** How a soak runs. */
export interface SoakOptions {
  /** How long agents start new turns, in milliseconds. */
  readonly durationMs: number;
  /** Agents running at once, each one episode (one session) after another. */
  readonly agents: number;
  /** The killed process lives a random time in this range (ms) before its next SIGKILL. */
  readonly killEveryMs: readonly [number, number];
  readonly faults: FaultMix;
  /** Turns of an episode, drawn in this range. */
  readonly turnsPerEpisode: readonly [number, number];
  /** Lines of each tool result (about 14 tokens a line), drawn in this range. */
  readonly toolResultLines: readonly [number, number];
  /** An episode ends once its prompt passes this many tokens. */
  readonly maxPromptTokens: number;
  /** The share of whole replies thrown away before the agent reads them (it retries). */
  readonly replyLoss: number;
  /** After the duration, how long a turn still failing is tried before the agent gives up. */
  readonly drainMs: number;
  /** How often the processes' resident memory is sampled, in milliseconds. */
  readonly rssEveryMs: number;
  readonly seed: number;
  /** Receives a progress line now and then. */
  readonly log: (line: string) => void;
  /** The store: a KV file, or a PostgreSQL cluster restarted every `databaseRestartEveryMs`. */
  readonly store: "kv" | "postgres";
  /** With PostgreSQL, the database is killed and started again a random time in this range apart. */
  readonly databaseRestartEveryMs: readonly [number, number];
  /** How long it stays down each time, a random time in this range. */
  readonly databaseDownMs: readonly [number, number];
  /** The gateways' `STORE_TIMEOUT_MS` on PostgreSQL: a store call still unanswered is a 503. */
  readonly storeTimeoutMs: number;
}

/** Ten minutes of 64 agents, as `deno task soak` runs by default. */
export const SOAK_DEFAULTS: SoakOptions = {
  durationMs: 600_000,
  agents: 64,
  killEveryMs: [2_000, 6_000],
  faults: DEFAULT_FAULTS,
  turnsPerEpisode: [20, 60],
  toolResultLines: [1, 120],
  maxPromptTokens: 90_000,
  replyLoss: 0.01,
  drainMs: 120_000,
  rssEveryMs: 10_000,
  seed: 1,
  log: console.log,
  store: "kv",
  databaseRestartEveryMs: [20_000, 40_000],
  databaseDownMs: [500, 3_000],
  storeTimeoutMs: 3_000,
};

/**
 * The gateways' settings: a killed holder's lease runs out in 3 s, a hung engine call is given
 * up after 5 s, and an overloaded answer asks for a retry after 0.5 s.
 */
/**
 * Each process's budget: `MEMORY_BUDGET_MB` as given, else the default of a machine running the
 * two processes as two supervised workers.
 */
const SOAK_BUDGET_MB = Number(Deno.env.get("MEMORY_BUDGET_MB")) ||
  defaultMemoryBudgetMb(machineMemory() ?? 2 * 1024 ** 3, 2);

const GATEWAY_ENV = {
  LEASE_TTL_MS: "3000",
  LOCK_WAIT_MS: "20000",
  ENGINE_TIMEOUT_MS: "5000",
  RETRY_AFTER_MS: "500",
  ROLLOUT_WORKER: "false",
  MEMORY_BUDGET_MB: String(SOAK_BUDGET_MB),
  // Each process runs as a supervisor's worker would (`functions/_workers.ts`): its isolates'
  // heap limit from the budget, unless DENO_V8_FLAGS says otherwise.
  DENO_V8_FLAGS: Deno.env.get("DENO_V8_FLAGS") ?? heapFlags(memoryShares(SOAK_BUDGET_MB)),
};

/**
 * Runs a soak and returns its figures.
 *
 * @example
 * ```ts
 * const report = await runSoak({ durationMs: 20_000, agents: 8 });
 * console.log(formatReport(report));
 * if (soakFailures(report).length > 0) Deno.exit(1);
 * ```
 */
export async function runSoak(overrides: Partial<SoakOptions> = {}): Promise<SoakReport> {
  const options: SoakOptions = { ...SOAK_DEFAULTS, ...overrides };
  const { log } = options;
  const tokenizer = await loadTokenizer(defaultTokenizerPath());
  const engine = await startSoakEngine({
    tokenizer,
    random: seeded(options.seed),
    faults: options.faults,
  });
  const dir = await Deno.makeTempDir({ prefix: "soak_" });
  const kvPath = `${dir}/gateway.kv`;
  const cluster = options.store === "postgres" ? await startPostgres() : null;
  const storeUrl = cluster ? await cluster.database() : null;
  const restarts = { count: 0 };
  let pair: GatewayPair | null = null;
  try {
    pair = await startGatewayPair({
      env: {
        ...GATEWAY_ENV,
        KV_PATH: kvPath,
        SGLANG_URL: engine.url,
        ...(storeUrl
          ? { STORE_URL: storeUrl, STORE_TIMEOUT_MS: String(options.storeTimeoutMs) }
          : {}),
      },
      // On PostgreSQL the two processes are two hosts: a folder and a name each.
      hosts: storeUrl !== null,
      killEveryMs: options.killEveryMs,
      rssEveryMs: options.rssEveryMs,
      random: seeded(options.seed + 1),
    });
    const gateways = pair;
    const started = Date.now();
    const deadline = started + options.durationMs;
    const stats = newClientStats();
    const shape = await claudeCodeShape();
    log(
      `soak: ${options.agents} agents for ${options.durationMs / 1000} s, seed ${options.seed}, ` +
        (cluster
          ? `PostgreSQL on port ${cluster.port}, restarted every ` +
            `${options.databaseRestartEveryMs.map((ms) => ms / 1000).join("–")} s`
          : `KV ${kvPath}`),
    );
    // The database dies and comes back now and then, until the deadline.
    const restarting = cluster
      ? restartDatabase(cluster, options, deadline, seeded(options.seed + 3), restarts, log)
      : Promise.resolve();
    const progress = setInterval(() => {
      const faults = Object.values(engine.injected).reduce((a, b) => a + b, 0);
      const rss = gateways.rss.at(-1);
      log(
        `  ${Math.round((Date.now() - started) / 1000)} s: ${stats.accepted} turns, ` +
          `${stats.retried} retried, ${stats.replayed} replayed, ${gateways.kills} kills, ` +
          `${faults} faults, RSS ${rss?.stable ?? "-"}/${rss?.killed ?? "-"} MiB`,
      );
    }, Math.max(5_000, Math.min(30_000, options.durationMs / 10)));
    // At the deadline faults and kills stop, so turns in flight finish on a quiet system.
    const quiet = setTimeout(() => {
      engine.setFaulting(false);
      void gateways.stopKilling();
    }, options.durationMs);
    try {
      await Promise.all(Array.from({ length: options.agents }, (_, slot) =>
        runAgent(slot, {
          shape,
          random: seeded(options.seed + 2 + slot),
          gateways: () => gateways.up(),
          trainer: gateways.stable.url,
          adminToken: ADMIN_TOKEN,
          receivedAt: (rid) => engine.answered(rid)?.receivedAt,
          turnsPerEpisode: options.turnsPerEpisode,
          toolResultLines: options.toolResultLines,
          maxPromptTokens: options.maxPromptTokens,
          replyLoss: options.replyLoss,
          deadline,
          giveUpAt: deadline + options.drainMs,
        }, stats)));
    } finally {
      clearInterval(progress);
      clearTimeout(quiet);
    }
    engine.setFaulting(false);
    await gateways.stopKilling();
    await restarting;
    const seconds = Math.round((Date.now() - started) / 1000);
    log(`  checking ${stats.episodes.length} sessions through the trainer API`);
    const chains = await checkChains(gateways.stable.url, ADMIN_TOKEN, stats.episodes, engine);
    await gateways.close();
    pair = null;
    const opened = await openStore({
      url: storeUrl,
      kvPath,
      postgres: {
        maxConnections: 2,
        statementTimeoutMs: 60_000,
        connectTimeoutMs: 10_000,
        sweepIntervalMs: 0,
      },
    });
    const scan = await scanKv(opened.store).finally(() => opened.close());
    const bytes = storeUrl ? await databaseBytes(storeUrl) : (await Deno.stat(kvPath)).size;
    return {
      seconds,
      agents: options.agents,
      episodes: stats.episodes.length,
      unfinished: stats.episodes.filter((e) => e.unfinished !== null || !e.closed).length,
      committed: chains.turns,
      accepted: stats.accepted,
      retried: stats.retried,
      replayed: stats.replayed,
      lost: chains.lost,
      unacknowledged: chains.unacknowledged,
      halfWritten: scan.halfWritten,
      falseForks: chains.falseForks,
      inexact: chains.inexact,
      errors: [...stats.errors, ...gateways.problems()],
      kills: gateways.kills,
      databaseRestarts: restarts.count,
      store: options.store,
      restarts: gateways.restarts,
      restartFailures: gateways.restartFailures.length,
      engineCalls: engine.calls(),
      faults: { ...engine.injected },
      repliesLost: stats.repliesLost,
      aborts: chains.aborts,
      statuses: { ...stats.statuses },
      connectionErrors: stats.connectionErrors,
      brokenStreams: stats.brokenStreams,
      latency: {
        p50: percentile(stats.latencies, 0.5),
        p99: percentile(stats.latencies, 0.99),
        max: percentile(stats.latencies, 1),
      },
      rss: [...gateways.rss],
      rssEverySeconds: options.rssEveryMs / 1000,
      budgetMb: SOAK_BUDGET_MB,
      loadMs: options.durationMs,
      prompts: {
        mean: Math.round(chains.promptTokens / Math.max(1, chains.sessions)),
        max: chains.largestPrompt,
      },
      kv: {
        megabytes: Math.round(bytes / 1_048_576),
        turns: scan.turns,
        staleLeases: scan.staleLeases,
      },
      problems: [
        ...stats.episodes.flatMap((e) => e.unfinished ? [`${e.id}: ${e.unfinished}`] : []),
        ...chains.problems,
        ...scan.problems,
        ...gateways.restartFailures,
      ],
    };
  } finally {
    await pair?.close();
    await engine.close();
    await cluster?.close();
    await Deno.remove(dir, { recursive: true });
  }
}

/**
 * Kills the database (as a crash would) and starts it again, a random time in
 * `databaseRestartEveryMs` apart, down a random time in `databaseDownMs` each time, until
 * `deadline`.
 */
async function restartDatabase(
  cluster: PostgresCluster,
  options: SoakOptions,
  deadline: number,
  random: ReturnType<typeof seeded>,
  restarts: { count: number },
  log: (line: string) => void,
): Promise<void> {
  for (;;) {
    const wait = random.between(...options.databaseRestartEveryMs);
    if (Date.now() + wait >= deadline) return;
    await sleep(wait);
    await cluster.kill();
    const down = random.between(...options.databaseDownMs);
    log(`  the database is down for ${down} ms`);
    await sleep(down);
    await cluster.start();
    restarts.count++;
  }
}

/** The database's size on disk, in bytes. */
async function databaseBytes(url: string): Promise<number> {
  const sql = postgres(url, { max: 1, onnotice: () => {} });
  try {
    const [{ bytes }] = await sql`SELECT pg_database_size(current_database()) AS bytes`;
    return Number(bytes);
  } finally {
    await sql.end();
  }
}

/** `--store` (`SOAK_STORE`): `kv` (the default) or `postgres`. */
function storeSetting(): "kv" | "postgres" {
  const at = Deno.args.indexOf("--store");
  const raw = at >= 0 ? Deno.args[at + 1] : Deno.env.get("SOAK_STORE") ?? "kv";
  if (raw !== "kv" && raw !== "postgres") {
    console.error(`Cannot run the soak: --store (SOAK_STORE) is kv or postgres, got "${raw}"`);
    Deno.exit(2);
  }
  return raw;
}

/** A flag's value (`--name N`), else the environment variable's, else `fallback`. */
function setting(flag: string, variable: string, fallback: number): number {
  const at = Deno.args.indexOf(flag);
  const raw = at >= 0 ? Deno.args[at + 1] : Deno.env.get(variable);
  if (raw === undefined || raw === "") return fallback;
  const value = Number(raw);
  if (!Number.isFinite(value) || value < 0) {
    console.error(`Cannot run the soak: ${flag} (${variable}) must be a number, got "${raw}"`);
    Deno.exit(2);
  }
  return value;
}

if (import.meta.main) {
  const report = await runSoak({
    durationMs: setting("--duration", "SOAK_DURATION_S", SOAK_DEFAULTS.durationMs / 1000) * 1000,
    agents: setting("--agents", "SOAK_AGENTS", SOAK_DEFAULTS.agents),
    seed: setting("--seed", "SOAK_SEED", SOAK_DEFAULTS.seed),
    store: storeSetting(),
  });
  console.log(formatReport(report));
  const failures = soakFailures(report);
  if (failures.length > 0) {
    console.error(`Soak failed: ${failures.join(", ")}`);
    Deno.exit(1);
  }
}
