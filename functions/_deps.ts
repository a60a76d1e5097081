/**
 * Builds what every function needs from the resolved configuration: KV, tokenizer, engine,
 * token cache and secrets. Nothing here runs at import time.
 *
 * @module
 */
import v8 from "node:v8";
import { Hono } from "hono";
import {
  budgetSettingsCache,
  type LowerOptions,
  sessionKeyPrefix,
  settingsCacheStats,
  type VisionLowering,
} from "../lib/anthropic/mod.ts";
import { type VisionSettings, visionSettings } from "../lib/vision/mod.ts";
import { IdentityMemo } from "../lib/chat/mod.ts";
import {
  heapFlags,
  mallocTrim,
  type MemoryShares,
  memoryShares,
  RecurringFields,
  type Trim,
  TRIM_EVERY_MS,
} from "../lib/cache/mod.ts";
import { jsonShapeProblem, MAX_JSON_DEPTH } from "../lib/limits/mod.ts";
import { agentInstalls, AGENTS, dispatchToolsOf } from "../lib/agents/mod.ts";
import { type Config, resolveConfig } from "../lib/config/mod.ts";
import { ConfigError } from "../lib/errors/mod.ts";
import {
  type Engine,
  ENGINE_DIALECTS,
  type EngineController,
  type EngineDialect,
  engineDialect,
  EngineHttpWorker,
  type MoeShape,
  moeShape,
  PlacedEngine,
} from "../lib/engine/mod.ts";
import {
  ChainCache,
  CursorSeal,
  type OpenedStore,
  openStore,
  redacted,
  sharedSecret,
  type Store,
  StoreUnavailableError,
} from "../lib/kv/mod.ts";
import {
  type CachedChain,
  cachedChainBytes,
  cachedChainTokens,
  cacheKey,
  Dispatches,
  type TurnDeps,
  TurnLoad,
} from "../lib/session/mod.ts";
import { ImageBytes } from "../lib/session/mod.ts";
import {
  modelFamily,
  ModelFormatError,
  type ModelFormats,
  resolveFormats,
} from "../lib/output/mod.ts";
import {
  type ChatTokenizer,
  loadTokenizer,
  tokenizerSource,
  withFormats,
  withTextTokens,
} from "../lib/tokenizer/mod.ts";
import {
  adaptiveEncoder,
  checkImageTemplate,
  checkTemplate,
  EncoderPool,
  inProcessEncoder,
  TemplateError,
} from "../lib/template/mod.ts";
import { type ScriptedEngine, startScriptedEngine } from "../lib/scripted_engine/mod.ts";
import {
  describeRunners,
  type Judger,
  JudgerConfigError,
  keptVerdicts,
  loadJudgers,
  type RunnersHere,
  runnersHere,
  Slots,
  storeBaseRuns,
  type TaskValidation,
  type ValidateDeps,
} from "../lib/evaluate/mod.ts";
import { RolloutWorker } from "../lib/rollout/mod.ts";
import type { LifecycleDeps } from "../lib/session/mod.ts";
import {
  countedBackend,
  SANDBOX_BACKEND_KINDS,
  type SandboxBackend,
  sandboxBackendKind,
  sandboxBackends,
} from "../lib/sandbox/mod.ts";
import {
  catalogueFor,
  createMetrics,
  type GatewayMetrics,
  memorySampler,
} from "../lib/metrics/mod.ts";
import { atEdge } from "./_edge.ts";
import { errorOptions } from "./_http.ts";

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
 * `ENGINE_URL` is configured.
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
  const judgers = await loadJudgers(config.judgers, config.defaultJudger, Deno.cwd()).catch(
    (error) => {
      if (error instanceof JudgerConfigError) throw new ConfigError("JUDGERS", error.message);
      throw error;
    },
  );
  if (!overrides.sandbox) checkSandboxBackend(config);
  // Every cache of the process takes its share of MEMORY_BUDGET_MB, in bytes.
  const memory = memoryShares(config.memoryBudgetMb);
  const shares = memory.caches;
  budgetSettingsCache(shares.settings);
  const tokenizer = await loadServedTokenizer(config, overrides.tokenizer);
  const formats = tokenizer.formats;
  // Placed by the gateway, tokens are counted per engine worker: one series each.
  const metrics = config.enginePlacement === "gateway"
    ? createMetrics(catalogueFor({ engineWorkers: config.engineWorkers?.length ?? 0 }))
    : createMetrics();
  const opened = overrides.kv
    ? { store: overrides.kv, description: "given", close: () => Promise.resolve() }
    : await openConfiguredStore(config);
  const kv = opened.store;
  let scripted: ScriptedEngine | null = null;
  const dialect = dialectOf(config.engineApi);
  if (config.engineSessions && !dialect.sessions) {
    throw new ConfigError(
      "ENGINE_SESSIONS",
      `Invalid ENGINE_SESSIONS: the ${dialect.name} dialect has no engine sessions`,
    );
  }
  const vision = config.imagePolicy === "vision"
    ? await loadVision(config, tokenizer, dialect)
    : null;
  const moe = config.routedExperts ? await loadMoe(config, dialect) : null;
  const contextLength = config.contextLength ?? tokenizer.modelMaxLength ?? 32_768;
  let engine = overrides.engine;
  // Engine requests are made off the request's event loop (docs/DESIGN.md §7).
  const httpWorker = overrides.engine ? null : overrides.engineHttpWorker ?? new EngineHttpWorker();
  if (!engine) {
    const options = {
      ...(httpWorker ? { httpWorker } : {}),
      connections: config.engineConnections,
      timeoutMs: config.engineTimeoutMs,
      metrics,
      endpoint: config.vllmEndpoint,
      cacheSalt: config.cacheSalt,
      routingKeys: config.enginePlacement === "router",
      ...(config.engineSessions
        ? { engineSessions: { idleS: config.engineSessionIdleS, capacity: contextLength } }
        : {}),
      ...(moe ? { moe } : {}),
    };
    if (config.enginePlacement === "gateway") {
      // Validated with the configuration: gateway placement names its workers.
      engine = new PlacedEngine(
        config.engineWorkers!.map((url) => ({ url, engine: dialect.connect(url, options) })),
        { healthIntervalMs: config.engineHealthIntervalMs, metrics },
      );
    } else {
      let url = config.engineUrl;
      if (url === null) {
        scripted = await startScriptedEngine({
          tokenizer,
          latencyMs: config.scriptedLatencyMs,
          dialect: dialect.name,
          ...(vision ? { vision: { settings: vision.settings, padId: vision.padId } } : {}),
          ...(moe ? { moe } : {}),
        });
        url = scripted.url;
      }
      engine = dialect.connect(url, options);
    }
  }
  const backends = overrides.sandbox
    ? new Map([[overrides.sandbox.name, overrides.sandbox]])
    // Local sandboxes never see the gateway's KV folder.
    : sandboxBackends(config, {
      hidden: config.kvPath === ":memory:" ? [] : [dirOf(config.kvPath)],
    });
  // Every boot counted, whichever path (an evaluation, an agent's sandbox) takes it.
  const sandboxes = new Map(
    [...backends].map(([name, backend]) => [name, countedBackend(backend, metrics)]),
  );
  const sandbox = sandboxes.get(overrides.sandbox?.name ?? config.sandboxBackend)!;
  const holder = `${config.hostId}:${Deno.pid}`;
  const lease = {
    ttlMs: config.leaseTtlMs,
    waitMs: config.lockWaitMs,
    metrics,
    ...(overrides.clock ? { now: overrides.clock } : {}),
  };
  // Only placement and engine sessions hold anything a chain that ends lets go: without them a
  // session's delete reads no summary to tell the engine.
  const holds = config.enginePlacement === "gateway" || config.engineSessions;
  const released = holds ? engine.release?.bind(engine) : undefined;
  const cache = new ChainCache<CachedChain>(
    shares.chains,
    (chain, key) => 2 * key.length + cachedChainBytes(chain),
    cachedChainTokens,
    config.chainCacheTokens ?? Infinity,
  );
  // Held messages and their identities, about 16 bytes a token of history: at the default
  // budget, some 64 conversations of 100k tokens.
  const identities = new IdentityMemo(shares.identities);
  const lifecycle: LifecycleDeps = {
    kv,
    lease,
    holder,
    retentionMs: config.sessionRetentionMs,
    ...(released ? { released } : {}),
    // A session that takes no more turns leaves the caches to those that still run.
    ended: (sessionId, chainIds) => {
      for (const id of chainIds) cache.delete(cacheKey({ sessionId, id }));
      identities.forget(sessionKeyPrefix(sessionId));
    },
  };
  const evaluation: ValidateDeps = {
    backend: sandbox,
    judgers,
    defaultJudger: config.defaultJudger,
    timeoutMs: config.evalTimeoutMs,
    outputBytes: config.sandboxOutputBytes,
    cacheDir: `${config.sandboxRoot}/cache`,
    metrics,
    baseRuns: storeBaseRuns(kv, {
      ttlMs: config.evalVerdictTtlMs,
      holder,
      leaseTtlMs: config.leaseTtlMs,
      // A run takes at most its time limit, after its boot.
      waitMs: config.evalTimeoutMs + 10 * 60_000,
    }),
    validations: keptVerdicts<TaskValidation>(kv, "validation", {
      ttlMs: config.evalVerdictTtlMs,
      holder,
      leaseTtlMs: config.leaseTtlMs,
      // A solution's run, then two runs of the tests with it, each after its boot.
      waitMs: 3 * config.evalTimeoutMs + 10 * 60_000,
    }),
  };
  const agents = await agentInstalls(config.rollout.agents);
  const load = new TurnLoad();
  const workers = config.tokenizerWorkers;
  const pool = workers === 0
    ? null
    : (overrides.encoderPool ?? encoderPool)(tokenizer, workers, shares.sections);
  const encoder = pool === null ? inProcessEncoder(tokenizer) : adaptiveEncoder(
    inProcessEncoder(tokenizer),
    pool,
    // A small text stays on the event loop while this turn is the only one running.
    { inlineChars: ENCODE_INLINE_CHARS, contended: () => load.running > 1 },
  );
  let listening: string | null = null;
  const rollout = new RolloutWorker({
    kv,
    lifecycle,
    backends: sandboxes,
    defaultBackend: sandbox.name,
    evaluate: evaluation,
    gatewayUrl: () => {
      const url = config.rollout.gatewayUrl ?? listening;
      if (url === null) {
        throw new Error("The gateway's own URL is unknown: set ROLLOUT_GATEWAY_URL");
      }
      return url;
    },
    modelId: config.modelId,
    contextLength,
    agents,
    bootSlots: config.rollout.bootConcurrency,
    hostId: config.hostId,
    leaseTtlMs: config.leaseTtlMs,
    holder,
    outputBytes: config.sandboxOutputBytes,
    metrics,
  }, { concurrency: config.rollout.concurrency, pollMs: config.rollout.pollMs });
  const imageBytes = vision ? new ImageBytes(shares.images) : null;
  const recurringFields = overrides.recurringFields ?? new RecurringFields({
    // The tools and system prompts of some sixty agents (Claude Code's are 38 KB) at the
    // default budget.
    capacityBytes: shares.recurringFields,
    minChars: 1024,
    maxValues: 64,
    // A held value is a top-level field: one level down the body.
    accepts: (value) => jsonShapeProblem(value, MAX_JSON_DEPTH - 1) === null,
  });
  return {
    config,
    formats,
    kv,
    tokenizer,
    engine,
    cache,
    dispatch: dispatchToolsOf(AGENTS),
    encoder,
    encoderPool: pool,
    load,
    dispatches: new Dispatches(),
    ...(imageBytes ? { imageBytes } : {}),
    ...(moe ? { moe } : {}),
    identities,
    recurringFields,
    sampleMemory: memorySampler(metrics, {
      chains: () => cache.stats(),
      identities: () => identities.stats(),
      recurring_fields: () => recurringFields.stats(),
      settings: settingsCacheStats,
      ...(imageBytes ? { images: () => imageBytes.stats() } : {}),
      ...(tokenizer.sectionStats ? { sections: () => tokenizer.sectionStats!() } : {}),
      ...(pool ? { worker_sections: () => pool.sectionStats() } : {}),
    }),
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
    control: dialect.control(engine.url, {
      workers: config.engineWorkers,
      timeoutMs: config.engineTimeoutMs,
    }),
    dialect,
    scripted,
    sandbox,
    sandboxes,
    evaluation,
    lifecycle,
    rollout,
    setListening: (url) => void (listening = url),
    judgers,
    evalSlots: new Slots(config.evalConcurrency),
    metrics,
    close: async () => {
      await rollout.stop();
      if (!overrides.sandbox) await Promise.all([...sandboxes.values()].map((s) => s.close()));
      if (!overrides.engine) await engine.close();
      if (!overrides.engineHttpWorker) await httpWorker?.close();
      if (!overrides.encoderPool) await pool?.close();
      await scripted?.close();
      await opened.close();
    },
  };
}

/** Texts of more characters than this go to the pool's bulk lane (its last worker). */
const ENCODE_BULK_CHARS = 64 * 1024;
/**
 * Texts of at most this many characters a lone turn encodes on the event loop: a few tenths of
 * a millisecond of work, less than the trip to a worker costs on top of it.
 */
const ENCODE_INLINE_CHARS = 4 * 1024;
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
 * The served model's tokenizer (`given`, or loaded from `TOKENIZER_PATH`), with its formats
 * resolved and its template checked. Fails at start-up, not on a request: a model whose output
 * the gateway cannot read, a template that cannot be rendered as a delta.
 *
 * @throws {ConfigError} naming the variable to fix.
 */
export async function loadServedTokenizer(
  config: Config,
  given?: ChatTokenizer,
): Promise<ChatTokenizer> {
  const loaded = withTextTokens(
    given ?? await loadTokenizer(config.tokenizerPath, {
      chatTemplate: await chatTemplateOverride(config.chatTemplatePath),
      sectionCacheBytes: memoryShares(config.memoryBudgetMb).caches.sections,
    }),
    config.specialTokensInText,
  );
  const tokenizer = servedTokenizer(loaded, config);
  checkServedTemplate(tokenizer, config);
  return tokenizer;
}

/** `preprocessor_config.json` in the tokenizer folder `dir`, when it is there. */
async function imageProcessorOf(dir: string): Promise<string | null> {
  const file = `${dir.replace(/\/+$/, "")}/preprocessor_config.json`;
  try {
    return (await Deno.stat(file)).isFile ? file : null;
  } catch {
    return null;
  }
}

/**
 * The served model's MoE shape for `ROUTED_EXPERTS`, from `config.json` beside the tokenizer,
 * on a dialect whose engine returns routed experts.
 *
 * @throws {ConfigError} naming `ROUTED_EXPERTS` without the file, with a file that describes no
 * mixture of experts, or on a dialect that cannot return them.
 */
async function loadMoe(config: Config, dialect: EngineDialect): Promise<MoeShape> {
  const refuse = (why: string) =>
    new ConfigError("ROUTED_EXPERTS", `Invalid ROUTED_EXPERTS: ${why}`);
  if (!dialect.routedExperts) {
    throw refuse(`the ${dialect.name} dialect's engine returns no routed experts`);
  }
  const file = `${config.tokenizerPath.replace(/\/+$/, "")}/config.json`;
  let text: string;
  try {
    text = await Deno.readTextFile(file);
  } catch {
    throw refuse(
      `no model config.json in TOKENIZER_PATH (${config.tokenizerPath}) to read the ` +
        "model's layers and experts from",
    );
  }
  try {
    return moeShape(JSON.parse(text));
  } catch (error) {
    throw refuse(`${file}: ${error instanceof Error ? error.message : String(error)}`);
  }
}

/**
 * What `IMAGE_POLICY=vision` needs, checked at start-up: the processor's settings from
 * `preprocessor_config.json` beside the tokenizer, an engine dialect that sends images, and a
 * template that renders an image part as the family's one image pad.
 *
 * @throws {ConfigError} naming the variable to fix.
 */
async function loadVision(
  config: Config,
  tokenizer: ChatTokenizer,
  dialect: EngineDialect,
): Promise<VisionLowering & { padId: number }> {
  const file = `${config.tokenizerPath.replace(/\/+$/, "")}/preprocessor_config.json`;
  let settings: VisionSettings;
  try {
    settings = visionSettings(await Deno.readTextFile(file));
  } catch (error) {
    throw new ConfigError(
      "IMAGE_POLICY",
      `Invalid IMAGE_POLICY=vision: cannot read the image processor's settings from "${file}" (${
        (error as Error).message
      })`,
    );
  }
  if (!dialect.images) {
    throw new ConfigError(
      "IMAGE_POLICY",
      `Invalid IMAGE_POLICY=vision: the ${dialect.name} dialect does not send images to its engine`,
    );
  }
  let padId: number;
  try {
    padId = checkImageTemplate(tokenizer);
  } catch (error) {
    if (!(error instanceof TemplateError)) throw error;
    throw new ConfigError("IMAGE_POLICY", `Invalid IMAGE_POLICY=vision: ${error.message}`);
  }
  return {
    settings,
    padId,
    limits: {
      maxBytes: config.maxImageBytes,
      maxPixels: config.maxImagePixels,
      maxImages: config.maxImagesPerRequest,
    },
  };
}

/** The text of `CHAT_TEMPLATE`, or `undefined` when it is unset. */
async function chatTemplateOverride(path: string | null): Promise<string | undefined> {
  if (path === null) return undefined;
  try {
    return await Deno.readTextFile(path);
  } catch (error) {
    throw new ConfigError(
      "CHAT_TEMPLATE",
      `Invalid CHAT_TEMPLATE: cannot read "${path}" (${(error as Error).message})`,
    );
  }
}

/**
 * Renders what requests render, so a template that cannot be cut into deltas stops start-up,
 * naming where the template came from.
 */
function checkServedTemplate(tokenizer: ChatTokenizer, config: Config): void {
  try {
    checkTemplate(tokenizer);
  } catch (error) {
    if (!(error instanceof TemplateError)) throw error;
    const variable = config.chatTemplatePath === null ? "TOKENIZER_PATH" : "CHAT_TEMPLATE";
    throw new ConfigError(variable, `The chat template cannot be served: ${error.message}`);
  }
}

/** The tokenizer serving the model's formats, as configured or detected; refused at start-up. */
function servedTokenizer(tokenizer: ChatTokenizer, config: Config): ChatTokenizer {
  try {
    return withFormats(tokenizer, resolveFormats(tokenizer.chatTemplate, config));
  } catch (error) {
    if (error instanceof ModelFormatError) throw new ConfigError(error.variable, error.message);
    throw error;
  }
}

/**
 * Checks that `SANDBOX_BACKEND` names a registered sandbox backend (`lib/sandbox/backends.ts`)
 * this configuration can make.
 *
 * @throws {ConfigError} naming `SANDBOX_BACKEND` and the known backends.
 */
function checkSandboxBackend(config: Config): void {
  const kind = sandboxBackendKind(config.sandboxBackend);
  if (kind === undefined) {
    const known = SANDBOX_BACKEND_KINDS.map((known) => known.name).join(", ");
    throw new ConfigError(
      "SANDBOX_BACKEND",
      `Invalid SANDBOX_BACKEND: expected one of ${known}, got "${config.sandboxBackend}"`,
    );
  }
  const why = kind.unavailable(config);
  if (why !== null) throw new ConfigError("SANDBOX_BACKEND", `Invalid SANDBOX_BACKEND: ${why}`);
}

/** The registered engine dialect `ENGINE_API` names. */
function dialectOf(name: string): EngineDialect {
  const dialect = engineDialect(name);
  if (dialect !== undefined) return dialect;
  const known = ENGINE_DIALECTS.map((known) => known.name).join(", ");
  throw new ConfigError(
    "ENGINE_API",
    `Invalid ENGINE_API: expected one of ${known}, got "${name}"`,
  );
}

function dirOf(path: string): string {
  const absolute = path.startsWith("/") ? path : `${Deno.cwd()}/${path}`;
  return absolute.slice(0, absolute.lastIndexOf("/")) || "/";
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

/** What the gateway tells its operator at start-up, loudly so when the engine is scripted. */
export function banner(
  deps: Deps,
  listening: string,
  title = `Rollout Gateway listening on ${listening}`,
  runners: RunnersHere | null = null,
): string {
  const lines = [
    title,
    `  store:      ${deps.storeDescription}`,
    `  tokenizer:  ${deps.tokenizer.path}${
      deps.config.chatTemplatePath ? ` (template ${deps.config.chatTemplatePath})` : ""
    }; ${
      deps.config.tokenizerWorkers === 0
        ? "new text encoded on the event loop"
        : `new text encoded by ${deps.config.tokenizerWorkers} tokenizer workers`
    }`,
    `  formats:    tool calls ${deps.formats.toolCallParser}, reasoning ${
      deps.formats.reasoningParser ?? "none"
    }`,
    `  context:    ${deps.contextLength} tokens`,
    `  images:     ${imagesLine(deps)}`,
    `  memory:     ${memoryLine(deps)}`,
    `  engine:     ${
      deps.config.enginePlacement === "gateway"
        ? `${deps.config.engineWorkers?.length} workers, placed by the gateway`
        : deps.engine.url
    } (${deps.config.engineApi}${deps.config.engineSessions ? ", engine sessions" : ""})`,
    `  sandboxes:  ${deps.sandbox.name}${
      deps.sandbox.location === undefined ? "" : ` (${deps.sandbox.location})`
    }, judgers: ${[...deps.judgers.keys()].join(", ")}`,
    `  rollouts:   ${
      deps.config.rollout.worker
        ? `worker on, ${deps.config.rollout.concurrency} at once`
        : "worker off (API only)"
    }`,
    `  agents:     ${
      [...deps.rollout.deps.agents].map(([name, install]) =>
        `${name} ${install.local === null ? "(not installed here)" : "ready"}`
      ).join(", ")
    }`,
    `  runners:    ${
      deps.sandbox.capabilities.placement === "remote"
        ? "the sandbox image's (not checked from here)"
        : runners === null
        ? "not checked"
        : describeRunners(runners)
    }`,
  ];
  if (!deps.config.adminToken) {
    lines.push(`  admin token (generated, kept in KV): ${deps.adminToken}`);
  }
  if (deps.config.devOpenSessions) {
    lines.push("  DEV_OPEN_SESSIONS is on: any unknown token opens a session");
  }
  if (deps.scripted) lines.unshift(...SCRIPTED_WARNING);
  return lines.join("\n");
}

/**
 * The budget, what the caches may hold of it, the heap limit V8 runs with (and the flag that
 * holds it to the budget when it does not), and whether freed memory goes back to the system.
 */
function memoryLine(deps: Deps): string {
  const { memory } = deps;
  const mib = (bytes: number) => Math.round(bytes / (1024 * 1024));
  const caches = Object.values(memory.caches).reduce((sum, bytes) => sum + bytes, 0) +
    memory.caches.sections * deps.config.tokenizerWorkers;
  const limit = mib(v8.getHeapStatistics().heap_size_limit);
  // V8's limit is a little above the old space asked (the young generation is added).
  const held = limit <= memory.heapMiB * 1.25;
  return `budget ${deps.config.memoryBudgetMb} MiB (caches up to ${mib(caches)} MiB); V8 heap ` +
    `limit ${limit} MiB${
      held ? "" : ` (DENO_V8_FLAGS=${heapFlags(memory)} holds it to the budget)`
    }; freed memory ${
      deps.trimFreedMemory
        ? `given back every ${TRIM_EVERY_MS / 1000} s`
        : "kept by the allocator (no glibc here)"
    }`;
}

/**
 * Where the socket listens, said as it is, and the URL this machine reaches it at (loopback for
 * every interface: agents in local sandboxes share this machine's network).
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { listeningOn } from "./_deps.ts";
 * assert.deepEqual(listeningOn("0.0.0.0", 8080), {
 *   url: "http://127.0.0.1:8080",
 *   words: "http://127.0.0.1:8080 (every interface: HOST=0.0.0.0)",
 * });
 * assert.deepEqual(listeningOn("127.0.0.1", 8080), {
 *   url: "http://127.0.0.1:8080",
 *   words: "http://127.0.0.1:8080 (this machine only: HOST=0.0.0.0 listens on every interface)",
 * });
 * ```
 */
export function listeningOn(hostname: string, port: number): { url: string; words: string } {
  const every = hostname === "0.0.0.0" || hostname === "::";
  const local = every ? "127.0.0.1" : hostname;
  const url = `http://${local.includes(":") ? `[${local}]` : local}:${port}`;
  if (every) return { url, words: `${url} (every interface: HOST=${hostname})` };
  const loopback = /^127\.|^::1$|^localhost$/.test(hostname);
  return {
    url,
    words: loopback ? `${url} (this machine only: HOST=0.0.0.0 listens on every interface)` : url,
  };
}

/**
 * What the banner says of images: the policy in force, and when images become placeholders while
 * the tokenizer folder holds an image processor (a vision-language model served blind), how to
 * give them to the model.
 */
function imagesLine(deps: Deps): string {
  const policy = deps.config.imagePolicy;
  const said = {
    placeholder: "placeholder (each image becomes a short text naming it)",
    reject: "reject (a request with an image is a 400)",
    vision: "vision (images go to the model)",
  }[policy];
  return policy !== "vision" && deps.imageProcessor !== null
    ? `${said}; the tokenizer folder has an image processor (preprocessor_config.json): ` +
      "IMAGE_POLICY=vision gives images to the model"
    : said;
}

const BAR = "!".repeat(78);

/** What the banner says when no `ENGINE_URL` is set. */
export const SCRIPTED_WARNING: readonly string[] = [
  BAR,
  "!! ENGINE_URL is not set: answering with the BUILT-IN SCRIPTED ENGINE.",
  "!! Its replies are canned text, not a model. Set ENGINE_URL to serve a real engine.",
  BAR,
];

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
