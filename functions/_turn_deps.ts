/**
 * What a turn runs on besides the engine and the store, built from the configuration: the
 * caches that share the memory budget (chains, conversations' identities, agents' recurring
 * fields, image bytes), the encoder (the tokenizer workers, or the event loop), the session
 * lifecycle that empties those caches when a session ends, and the sampler that reports them.
 *
 * @module
 */
import { sessionKeyPrefix, settingsCacheStats } from "../lib/anthropic/mod.ts";
import { type MemoryShares, RecurringFields } from "../lib/cache/mod.ts";
import { IdentityMemo } from "../lib/chat/mod.ts";
import type { Config } from "../lib/config/mod.ts";
import type { Engine } from "../lib/engine/mod.ts";
import { ChainCache, type Store } from "../lib/kv/mod.ts";
import { jsonShapeProblem, MAX_JSON_DEPTH } from "../lib/limits/mod.ts";
import { type GatewayMetrics, memorySampler } from "../lib/metrics/mod.ts";
import {
  type CachedChain,
  cachedChainBytes,
  cachedChainTokens,
  cacheKey,
  ImageBytes,
  type LifecycleDeps,
  TurnLoad,
} from "../lib/session/mod.ts";
import {
  adaptiveEncoder,
  type EncoderPool,
  inProcessEncoder,
  type PromptEncoder,
} from "../lib/template/mod.ts";
import type { ChatTokenizer } from "../lib/tokenizer/mod.ts";

/**
 * Texts of at most this many characters a lone turn encodes on the event loop: a few tenths of
 * a millisecond of work, less than the trip to a worker costs on top of it.
 */
const ENCODE_INLINE_CHARS = 4 * 1024;

/** What the turn's parts are built with besides the configuration. */
export interface TurnPartsInput {
  readonly kv: Store;
  readonly tokenizer: ChatTokenizer;
  readonly engine: Engine;
  readonly metrics: GatewayMetrics;
  readonly memory: MemoryShares;
  /** The lease settings of this process (its clock a test's when given). */
  readonly lease: LifecycleDeps["lease"];
  readonly holder: string;
  /** Makes the tokenizer workers' pool; `null` with `TOKENIZER_WORKERS=0`. */
  readonly pool: (sectionCacheBytes: number) => EncoderPool | null;
  /** Images go to the model (`IMAGE_POLICY=vision`): their bytes are cached too. */
  readonly vision: boolean;
  /** The memo of agents' recurring fields to use instead (a test's). */
  readonly recurringFields?: RecurringFields;
}

/** The turn's caches, encoder and lifecycle. */
export interface TurnParts {
  readonly cache: ChainCache<CachedChain>;
  readonly identities: IdentityMemo;
  readonly recurringFields: RecurringFields;
  /** The images' bytes, when images go to the model. */
  readonly imageBytes?: ImageBytes;
  readonly lifecycle: LifecycleDeps;
  readonly load: TurnLoad;
  readonly encoder: PromptEncoder;
  /** The tokenizer workers `encoder` sends texts to; `null` with `TOKENIZER_WORKERS=0`. */
  readonly encoderPool: EncoderPool | null;
  /** Writes the process's memory and its caches' stats into the metrics. */
  readonly sampleMemory: () => void;
}

/** Builds the turn's parts, each cache at its share of `MEMORY_BUDGET_MB`. */
export function buildTurnParts(config: Config, input: TurnPartsInput): TurnParts {
  const shares = input.memory.caches;
  const cache = new ChainCache<CachedChain>(
    shares.chains,
    (chain, key) => 2 * key.length + cachedChainBytes(chain),
    cachedChainTokens,
    config.chainCacheTokens ?? Infinity,
  );
  // Held messages and their identities, about 16 bytes a token of history: at the default
  // budget, some 64 conversations of 100k tokens.
  const identities = new IdentityMemo(shares.identities);
  // Only placement and engine sessions hold anything a chain that ends lets go: without them a
  // session's delete reads no summary to tell the engine.
  const holds = config.enginePlacement === "gateway" || config.engineSessions;
  const released = holds ? input.engine.release?.bind(input.engine) : undefined;
  const lifecycle: LifecycleDeps = {
    kv: input.kv,
    lease: input.lease,
    holder: input.holder,
    retentionMs: config.sessionRetentionMs,
    ...(released ? { released } : {}),
    // A session that takes no more turns leaves the caches to those that still run.
    ended: (sessionId, chainIds) => {
      for (const id of chainIds) cache.delete(cacheKey({ sessionId, id }));
      identities.forget(sessionKeyPrefix(sessionId));
    },
  };
  const load = new TurnLoad();
  const pool = input.pool(shares.sections);
  const inProcess = inProcessEncoder(input.tokenizer);
  const encoder = pool === null ? inProcess : adaptiveEncoder(inProcess, pool, {
    // A small text stays on the event loop while this turn is the only one running.
    inlineChars: ENCODE_INLINE_CHARS,
    contended: () => load.running > 1,
  });
  const imageBytes = input.vision ? new ImageBytes(shares.images) : null;
  const recurringFields = input.recurringFields ?? new RecurringFields({
    // The tools and system prompts of some sixty agents (Claude Code's are 38 KB) at the
    // default budget.
    capacityBytes: shares.recurringFields,
    minChars: 1024,
    maxValues: 64,
    // A held value is a top-level field: one level down the body.
    accepts: (value) => jsonShapeProblem(value, MAX_JSON_DEPTH - 1) === null,
  });
  const tokenizer = input.tokenizer;
  const sampleMemory = memorySampler(input.metrics, {
    chains: () => cache.stats(),
    identities: () => identities.stats(),
    recurring_fields: () => recurringFields.stats(),
    settings: settingsCacheStats,
    ...(imageBytes ? { images: () => imageBytes.stats() } : {}),
    ...(tokenizer.sectionStats ? { sections: () => tokenizer.sectionStats!() } : {}),
    ...(pool ? { worker_sections: () => pool.sectionStats() } : {}),
  });
  return {
    cache,
    identities,
    recurringFields,
    ...(imageBytes ? { imageBytes } : {}),
    lifecycle,
    load,
    encoder,
    encoderPool: pool,
    sampleMemory,
  };
}
