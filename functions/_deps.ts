/**
 * Builds what every function needs from the resolved configuration: KV, tokenizer, engine,
 * token cache and secrets. Nothing here runs at import time.
 *
 * @module
 */
import { Hono } from "hono";
import {
  budgetSettingsCache,
  type LowerOptions,
  type VisionLowering,
} from "../lib/anthropic/mod.ts";
import type { IdentityMemo } from "../lib/chat/mod.ts";
import {
  mallocTrim,
  type MemoryShares,
  memoryShares,
  type RecurringFields,
  type Trim,
} from "../lib/cache/mod.ts";
import { AGENTS, dispatchToolsOf } from "../lib/agents/mod.ts";
import { type Config, resolveConfig } from "../lib/config/mod.ts";
import { ConfigError } from "../lib/errors/mod.ts";
import {
  configuredDialect,
  type Engine,
  type EngineController,
  type EngineDialect,
  type EngineHttpWorker,
} from "../lib/engine/mod.ts";
import {
  CursorSeal,
  type OpenedStore,
  openStore,
  redacted,
  sharedSecret,
  type Store,
  StoreUnavailableError,
} from "../lib/kv/mod.ts";
import { Dispatches, type LifecycleDeps, type TurnDeps } from "../lib/session/mod.ts";
import { imageProcessorOf, loadMoe, loadServedTokenizer, loadVision } from "../lib/model/mod.ts";
import { modelFamily, type ModelFormats } from "../lib/output/mod.ts";
import { type ChatTokenizer, tokenizerSource } from "../lib/tokenizer/mod.ts";
import { EncoderPool } from "../lib/template/mod.ts";
import type { ScriptedEngine } from "../lib/scripted_engine/mod.ts";
import { type Judger, runnersHere, Slots, type ValidateDeps } from "../lib/evaluate/mod.ts";
import type { RolloutWorker } from "../lib/rollout/mod.ts";
import { checkSandboxBackend, type SandboxBackend } from "../lib/sandbox/mod.ts";
import { catalogueFor, createMetrics, type GatewayMetrics } from "../lib/metrics/mod.ts";
import { banner } from "./_banner.ts";
import { atEdge } from "./_edge.ts";
import { connectEngine } from "./_engine_deps.ts";
import { errorOptions } from "./_http.ts";
import {
  buildRollouts,
  buildSandboxes,
  configuredJudgers,
  evaluationDeps,
} from "./_rollout_deps.ts";
import { buildTurnParts } from "./_turn_deps.ts";

/** Everything the functions are built from. */
export interface Deps extends TurnDeps {
  readonly config: Config;
  /** The served model's output formats, by SGLang's parser names. */
  readonly formats: ModelFormats;
  /** Signs and checks thinking blocks. */
  readonly signingSecret: string;
  /** Bearer token of the trainer API. */
  readonly adminToken: string;
  /** What the store is (the banner's line): the KV file, or PostgreSQL without its password. */
  readonly storeDescription: string;
  /** Seals the listings' cursors clients are given (a secret shared through KV). */
  readonly cursors: CursorSeal;
  /** Pause, continue and weight versions across the engine's workers. */
  readonly control: EngineController;
  /** The dialect the engine speaks (`ENGINE_API`). */
  readonly dialect: EngineDialect;
  /** The built-in scripted engine, when no `ENGINE_URL` is set. */
  readonly scripted: ScriptedEngine | null;
  /** Where sandboxes come from unless a request says: `SANDBOX_BACKEND`. */
  readonly sandbox: SandboxBackend;
  /** Every sandbox backend this gateway can use, by name (`e2b` when configured). */
  readonly sandboxes: ReadonlyMap<string, SandboxBackend>;
  /** How `/evaluate` (and rollouts' grading) run. */
  readonly evaluation: ValidateDeps;
  /** Session lifecycle settings of the trainer API and rollouts. */
  readonly lifecycle: LifecycleDeps;
  /** The rollout worker of this process; started by `serve.ts` once it listens. */
  readonly rollout: RolloutWorker;
  /** Tells the rollout worker where this process listens (agents reach the gateway there). */
  setListening(url: string): void;
  /** Judgers by name, loaded and checked at start-up. */
  readonly judgers: ReadonlyMap<string, Judger>;
  /** Evaluations running in this process, at most `EVAL_CONCURRENCY`. */
  readonly evalSlots: Slots;
  /** Each conversation's last request and its message identities (bytes: its budget share). */
  readonly identities: IdentityMemo;
  /** The tools and system prompts agents send again each turn, parsed and validated once. */
  readonly recurringFields: RecurringFields;
  /** How images reach the served vision-language model (`IMAGE_POLICY=vision`); else `null`. */
  readonly vision: VisionLowering | null;
  /** The image processor's settings file beside the tokenizer, when there is one; else `null`. */
  readonly imageProcessor: string | null;
  /** The tokenizer workers `encoder` sends texts to; `null` with `TOKENIZER_WORKERS=0`. */
  readonly encoderPool: EncoderPool | null;
  /** This process's metrics (one registry per process), counted by everything above. */
  readonly metrics: GatewayMetrics;
  /** Writes the process's memory and its caches' stats into `metrics` (a scrape, a snapshot). */
  readonly sampleMemory: () => void;
  /** What `MEMORY_BUDGET_MB` gives each cache, and the heap limit it asks of V8. */
  readonly memory: MemoryShares;
  /** Gives the process's freed memory back to the system (`null`: not on this platform). */
  readonly trimFreedMemory: Trim | null;
  /** Releases the engine pool, the scripted engine, live sandboxes and KV. */
  close(): Promise<void>;
}

/**
 * What every trainer route needs: the admin-token guard (`kv` to tell a session's token from a
 * wrong one), its configuration, and its error answers (counted in `metrics`).
 */
export type AdminDeps = Pick<Deps, "kv" | "adminToken" | "config" | "metrics">;

/** What an agent route needs: a turn's dependencies, configuration and the error count. */
export type AgentRouteDeps =
  & TurnDeps
  & Pick<Deps, "config" | "metrics" | "identities" | "recurringFields">
  & Partial<Pick<Deps, "vision">>;

/** Parts a caller (a test, the bench) may supply instead of having them built. */
export interface DepsOverrides {
  readonly kv?: Store;
  readonly tokenizer?: ChatTokenizer;
  /**
   * Makes the pool of `workers` tokenizer workers for the served tokenizer (one several gateways
   * share); what it makes is left open on close.
   */
  readonly encoderPool?: (
    tokenizer: ChatTokenizer,
    workers: number,
    sectionCacheBytes?: number,
  ) => EncoderPool;
  readonly engine?: Engine;
  readonly sandbox?: SandboxBackend;
  /** The memo of agents' recurring fields (a test's, to compare a gateway without one). */
  readonly recurringFields?: RecurringFields;
  /** The thread engine requests are made on (one several gateways share); left open on close. */
  readonly engineHttpWorker?: EngineHttpWorker;
  /** The clock leases are taken and renewed by (a test's, skewed as another host's may be). */
  readonly clock?: () => number;
}

/**
 * Opens KV, loads the tokenizer and connects the engine, starting the scripted engine when no
 * `ENGINE_URL` is configured. Each subsystem has its builder: the served model in `lib/model`,
 * the engine (`_engine_deps.ts`), a turn's caches and encoder (`_turn_deps.ts`), grading and
 * rollouts (`_rollout_deps.ts`).
 *
 * @example
 * ```ts
 * import { resolveConfig } from "../lib/config/mod.ts";
 * import { buildDeps } from "./_deps.ts";
 * // No ENGINE_URL: the built-in scripted engine answers.
 * const deps = await buildDeps(resolveConfig({ KV_PATH: ":memory:" }));
 * await deps.close();
 * ```
 */
export async function buildDeps(config: Config, overrides: DepsOverrides = {}): Promise<Deps> {
  // Judgers first: a bad judger stops start-up before anything is opened.
  const judgers = await configuredJudgers(config);
  if (!overrides.sandbox) checkSandboxBackend(config);
  // Every cache of the process takes its share of MEMORY_BUDGET_MB, in bytes.
  const memory = memoryShares(config.memoryBudgetMb);
  budgetSettingsCache(memory.caches.settings);
  const tokenizer = await loadServedTokenizer(config, overrides.tokenizer);
  // Placed by the gateway, tokens are counted per engine worker: one series each.
  const metrics = config.enginePlacement === "gateway"
    ? createMetrics(catalogueFor({ engineWorkers: config.engineWorkers?.length ?? 0 }))
    : createMetrics();
  const opened = overrides.kv
    ? { store: overrides.kv, description: "given", close: () => Promise.resolve() }
    : await openConfiguredStore(config);
  const kv = opened.store;
  const dialect = configuredDialect(config.engineApi);
  const vision = config.imagePolicy === "vision"
    ? await loadVision(config, tokenizer, dialect)
    : null;
  const moe = config.routedExperts ? await loadMoe(config, dialect) : null;
  const contextLength = config.contextLength ?? tokenizer.modelMaxLength ?? 32_768;
  const connected = await connectEngine(config, {
    dialect,
    tokenizer,
    metrics,
    contextLength,
    vision,
    moe,
    ...(overrides.engine ? { given: overrides.engine } : {}),
    ...(overrides.engineHttpWorker ? { httpWorker: overrides.engineHttpWorker } : {}),
  });
  const sandboxes = buildSandboxes(config, metrics, overrides.sandbox);
  const holder = `${config.hostId}:${Deno.pid}`;
  const lease = {
    ttlMs: config.leaseTtlMs,
    waitMs: config.lockWaitMs,
    metrics,
    ...(overrides.clock ? { now: overrides.clock } : {}),
  };
  const makePool = overrides.encoderPool ?? encoderPool;
  const turn = buildTurnParts(config, {
    kv,
    tokenizer,
    engine: connected.engine,
    metrics,
    memory,
    lease,
    holder,
    pool: (bytes) =>
      config.tokenizerWorkers === 0 ? null : makePool(tokenizer, config.tokenizerWorkers, bytes),
    vision: vision !== null,
    ...(overrides.recurringFields ? { recurringFields: overrides.recurringFields } : {}),
  });
  const evaluation = evaluationDeps(config, {
    kv,
    sandbox: sandboxes.sandbox,
    judgers,
    metrics,
    holder,
  });
  const rollouts = await buildRollouts(config, {
    kv,
    lifecycle: turn.lifecycle,
    sandboxes,
    evaluation,
    contextLength,
    metrics,
    holder,
  });
  return {
    config,
    formats: tokenizer.formats,
    kv,
    tokenizer,
    engine: connected.engine,
    dispatch: dispatchToolsOf(AGENTS),
    dispatches: new Dispatches(),
    ...(moe ? { moe } : {}),
    ...turn,
    memory,
    trimFreedMemory: mallocTrim(),
    vision,
    imageProcessor: await imageProcessorOf(config.tokenizerPath),
    contextLength,
    roundtripPolicy: config.roundtripPolicy,
    routePolicy: {
      realignMaxTokens: config.realignMaxTokens,
      thinkingHistory: config.thinkingHistory,
    },
    lease,
    holder,
    signingSecret: config.signingSecret ?? await sharedSecret(kv, "thinking_signature"),
    adminToken: config.adminToken ?? await sharedSecret(kv, "admin_token"),
    cursors: new CursorSeal(await sharedSecret(kv, "cursor_seal")),
    storeDescription: opened.description,
    control: connected.control,
    dialect,
    scripted: connected.scripted,
    ...sandboxes,
    evaluation,
    ...rollouts,
    judgers,
    evalSlots: new Slots(config.evalConcurrency),
    metrics,
    close: async () => {
      await rollouts.rollout.stop();
      if (!overrides.sandbox) {
        await Promise.all([...sandboxes.sandboxes.values()].map((s) => s.close()));
      }
      if (!overrides.encoderPool) await turn.encoderPool?.close();
      await connected.close();
      await opened.close();
    },
  };
}

/** Texts of more characters than this go to the pool's bulk lane (its last worker). */
const ENCODE_BULK_CHARS = 64 * 1024;
/** How long a tokenizer worker may hold on to a cancelled text before it is replaced. */
const ENCODE_CANCEL_GRACE_MS = 1_000;

/**
 * A pool of `workers` tokenizer workers, started on the first turn (or by `warm()`), each with a
 * section cache of `sectionCacheBytes`.
 */
export function encoderPool(
  tokenizer: ChatTokenizer,
  workers: number,
  sectionCacheBytes?: number,
): EncoderPool {
  return new EncoderPool({ ...tokenizerSource(tokenizer), sectionCacheBytes }, {
    workers,
    bulkChars: ENCODE_BULK_CHARS,
    cancelGraceMs: ENCODE_CANCEL_GRACE_MS,
  });
}

/**
 * The store `config` names: PostgreSQL at `STORE_URL`, else the KV file at `KV_PATH`.
 *
 * @throws {ConfigError} naming `STORE_URL` when the database cannot be reached.
 */
async function openConfiguredStore(config: Config): Promise<OpenedStore> {
  try {
    return await openStore({
      url: config.storeUrl,
      kvPath: config.kvPath,
      postgres: {
        maxConnections: config.storePoolSize,
        statementTimeoutMs: config.storeTimeoutMs,
        connectTimeoutMs: config.storeTimeoutMs,
        sweepIntervalMs: 60_000,
      },
    });
  } catch (error) {
    if (config.storeUrl !== null && error instanceof StoreUnavailableError) {
      throw new ConfigError(
        "STORE_URL",
        `Cannot reach the store at STORE_URL (${redacted(config.storeUrl)}): ${
          (error.cause as Error)?.message ?? error.message
        }`,
      );
    }
    throw error;
  }
}

/**
 * How requests are lowered for the template: the deployment's image and attribution policies,
 * and tool results labelled with the ids the served family's template writes for calls.
 */
export function loweringOptions(
  deps: Pick<Deps, "config" | "tokenizer"> & Partial<Pick<Deps, "vision">>,
): LowerOptions {
  return {
    images: deps.config.imagePolicy,
    ...(deps.vision ? { vision: deps.vision } : {}),
    keepAttribution: deps.config.keepAttribution,
    toolCallIds: modelFamily(deps.tokenizer.formats).toolCallIds,
  };
}

/** Deps built once from the process environment, for a function served on its own. */
let fromEnv: Promise<Deps> | null = null;

/**
 * An app for `deno serve functions/<name>.ts`: it builds deps from the environment and the real
 * app from them, served from the edge (`_edge.ts`), then delegates every request to it. Under
 * `deno serve` that happens once the server listens (its `onListen`), so a function served alone
 * is ready — its banner printed, a rollout function's worker running — before any request; an app
 * used otherwise (a test's `app.request()`) builds them on its first request. A configuration
 * that cannot start stops the process, saying why.
 */
export function lazyApp(create: (deps: Deps) => Hono): Hono {
  let real: Promise<Hono> | null = null;
  const build = (origin: string) => {
    fromEnv ??= buildDeps(resolveConfig(Deno.env.toObject())).then(async (deps) => {
      deps.setListening(origin);
      console.log(banner(deps, origin, undefined, await runnersHere()));
      return deps;
    });
    return real ??= fromEnv.then((deps) => atEdge(create(deps), errorOptions(deps)));
  };
  const app = new Hono();
  app.all("*", async (c) => (await build(new URL(c.req.url).origin)).fetch(c.req.raw));
  const onListen = ({ hostname, port }: { hostname: string; port: number }) => {
    const local = hostname === "0.0.0.0" || hostname === "::" ? "127.0.0.1" : hostname;
    build(`http://${local.includes(":") ? `[${local}]` : local}:${port}`).catch((error) => {
      console.error(`Cannot start: ${error instanceof Error ? error.message : error}`);
      Deno.exit(1);
    });
  };
  return Object.assign(app, { onListen });
}
