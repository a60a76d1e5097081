/**
 * The gateway as its own router over the engine's workers (`ENGINE_PLACEMENT=gateway`): each
 * chain's generations go to one worker, so its prefix stays in that worker's cache.
 *
 * - A chain's first generation is placed by consistent hashing of its routing key (the session:
 *   a session's chains share their system prompt and tools) on a ring of {@linkcode
 *   VIRTUAL_NODES} points per worker, with bounded load: a worker takes a new chain only while it
 *   runs fewer generations than {@linkcode LOAD_FACTOR} times the average (Mirrokni, Thorup,
 *   Zadimoghaddam, "Consistent Hashing with Bounded Loads"), else the ring's next worker does. A
 *   chain with a `near` chain (a sub-agent's parent) goes beside it when that worker has room.
 * - Later generations go where the chain was placed while that worker is healthy: load moves new
 *   chains, never a placed one (moving it costs a re-prefill of its whole history).
 * - Every worker's `/health` is checked every `healthIntervalMs`; a worker that fails a
 *   generation (unreachable, 5xx, its stream cut) is taken out at once, and comes back when its
 *   health check passes. A draining worker (`/health` not 200) takes no generations.
 * - A generation whose worker dies goes on on the next healthy worker: prompt + the output so
 *   far (what a streaming client was already shown), for the tokens left, under the same request
 *   id (another engine's). Its chain moves there: one re-prefill, never a lost or forked turn.
 *
 * Placements are kept per process, at most {@linkcode PINS_KEPT} (the least recently used
 * forgotten: that chain is placed again, by the same hash). Processes sharing a KV file place a
 * chain alike unless load moved it.
 *
 * @module
 */
import { healthy } from "./health.ts";
import { createHash } from "node:crypto";
import type { GatewayMetrics } from "../metrics/mod.ts";
import {
  type Engine,
  EngineUnavailableError,
  type GenerateRequest,
  type Generation,
  newRid,
  type SampledTokens,
  type VersionSpan,
} from "./engine.ts";
import { PromptIds } from "./prompt_ids.ts";

/** Points each worker has on the ring (as SGLang's model gateway places them). */
export const VIRTUAL_NODES = 160;

/** A worker takes a new chain while it runs fewer generations than this times the average. */
export const LOAD_FACTOR = 1.25;

/** Chain placements remembered per process. */
export const PINS_KEPT = 65_536;

/** One engine worker: its URL and a client of it in the engine's dialect. */
export interface EngineWorker {
  readonly url: string;
  readonly engine: Engine;
}

/** Options of {@linkcode PlacedEngine}. */
export interface PlacementOptions {
  /** How often each worker's `/health` is checked, in milliseconds. */
  readonly healthIntervalMs: number;
  /** Counts failovers and, per worker, prompt, cached and prefill tokens and failures. */
  readonly metrics?: GatewayMetrics;
  /** Whether the worker at `url` is healthy (by default: its `GET /health` answers 200). */
  readonly probe?: (url: string, signal: AbortSignal) => Promise<boolean>;
}

/** A worker as placement sees it now. */
export interface WorkerState {
  readonly index: number;
  readonly url: string;
  readonly healthy: boolean;
  /** Chains placed on it (in this process). */
  readonly chains: number;
  /** Generations running on it now. */
  readonly running: number;
}

/** One worker and what placement keeps of it. */
interface Placed {
  readonly index: number;
  readonly url: string;
  readonly engine: Engine;
  /** Its label in the metrics: its index in `ENGINE_WORKERS`. */
  readonly label: string;
  healthy: boolean;
  chains: number;
  running: number;
}

/**
 * Engine workers behind one {@linkcode Engine}, each chain placed on one of them.
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { defaultTokenizerPath } from "../config/mod.ts";
 * import { startScriptedFleet } from "../scripted_engine/mod.ts";
 * import { loadTokenizer } from "../tokenizer/mod.ts";
 * import { PlacedEngine } from "./placement.ts";
 * import { samplingParams } from "./sampling.ts";
 * import { SglangClient } from "./sglang_client.ts";
 * const tokenizer = await loadTokenizer(defaultTokenizerPath());
 * const fleet = await startScriptedFleet(2, { tokenizer, script: () => "Hi." });
 * const engine = new PlacedEngine(
 *   fleet.urls.map((url) => ({ url, engine: new SglangClient(url, { connections: 8, timeoutMs: 60_000 }) })),
 *   { healthIntervalMs: 1000 },
 * );
 * const inputIds = tokenizer.encode("Hello");
 * const sampling = samplingParams({ maxTokens: 8 }, { promptLength: 1, contextLength: 4096, stopIds: [] });
 * const chain = { id: "chain-1" };
 * const one = await engine.generate({ inputIds, sampling, routingKey: "session-1", chain });
 * const two = await engine.generate({ inputIds, sampling, routingKey: "session-1", chain });
 * assert.equal(one.worker, two.worker); // a chain stays on its worker
 * await engine.close();
 * await fleet.close();
 * ```
 */
export class PlacedEngine implements Engine {
  readonly url: string;
  readonly #workers: readonly Placed[];
  /** Ring points, ascending: `[hash, worker index]`. */
  readonly #ring: readonly (readonly [number, number])[];
  /** The worker of each placed chain, the least recently used first. */
  readonly #pins = new Map<string, Placed>();
  readonly #metrics: GatewayMetrics | undefined;
  readonly #probe: (url: string, signal: AbortSignal) => Promise<boolean>;
  readonly #timer: ReturnType<typeof setInterval>;
  readonly #intervalMs: number;
  #checking: Promise<void> | null = null;
  #closed = false;

  constructor(workers: readonly EngineWorker[], options: PlacementOptions) {
    if (workers.length === 0) throw new RangeError("Placement needs at least one engine worker");
    this.#workers = workers.map(({ url, engine }, index) => ({
      index,
      url,
      engine,
      label: String(index),
      healthy: true,
      chains: 0,
      running: 0,
    }));
    this.url = workers[0].url;
    this.#ring = workers.flatMap((worker, index) =>
      Array.from(
        { length: VIRTUAL_NODES },
        (_, v) => [hash32(`${worker.url}#${v}`), index] as const,
      )
    ).sort((a, b) => a[0] - b[0] || a[1] - b[1]);
    this.#metrics = options.metrics;
    this.#probe = options.probe ?? healthy;
    this.#intervalMs = options.healthIntervalMs;
    this.#timer = setInterval(() => void this.checkHealth(), options.healthIntervalMs);
    Deno.unrefTimer(Number(this.#timer));
  }

  /** The workers now: health, chains placed, generations running. */
  workers(): WorkerState[] {
    return this.#workers.map(({ index, url, healthy, chains, running }) => ({
      index,
      url,
      healthy,
      chains,
      running,
    }));
  }

  /** The worker chain `id` is placed on, if it is. */
  placementOf(chain: string): string | undefined {
    return this.#pins.get(chain)?.url;
  }

  /** Checks every worker's health now (one check at a time); resolves when it is done. */
  checkHealth(): Promise<void> {
    this.#checking ??= Promise.all(this.#workers.map(async (worker) => {
      const signal = AbortSignal.timeout(Math.max(this.#intervalMs, 1000));
      const ok = await this.#probe(worker.url, signal).catch(() => false);
      if (!ok && worker.healthy) this.#down(worker);
      else if (ok) worker.healthy = true;
    })).then(() => void (this.#checking = null));
    return this.#checking;
  }

  async generate(req: GenerateRequest): Promise<Generation> {
    const started = performance.now();
    const rid = req.rid ?? newRid();
    const prompt = req.inputIds instanceof PromptIds ? req.inputIds : PromptIds.from(req.inputIds);
    const shown = new Shown(req.topLogprobs !== undefined && req.topLogprobs > 0);
    const pinned = req.chain ? this.#pins.get(req.chain.id) : undefined;
    let worker = this.#place(req);
    // A chain moved off its worker (it went down) is computed again where it lands: the rows of
    // its routed experts for what it recorded are asked for too, to be checked.
    const first = pinned && pinned !== worker && req.routes
      ? { ...req, routes: { ...req.routes, verify: true } }
      : req;
    for (let failovers = 0;; failovers++) {
      const told = shown.count;
      // The same request id on the next worker (another engine): the turn keeps its id.
      const attempt: GenerateRequest = failovers === 0 ? { ...first, rid, inputIds: prompt } : {
        ...req,
        rid,
        inputIds: prompt.concat(shown.ids),
        sampling: { ...req.sampling, max_new_tokens: req.sampling.max_new_tokens - told },
        // A continuation is no turn of the chain's engine session.
        ...(req.chain ? { chain: { ...req.chain, after: null } } : {}),
        // Another worker computes the prefix again: its rows for it are checked.
        ...(req.routes ? { routes: { ...req.routes, verify: true } } : {}),
      };
      const { onTokens, onAnswered } = req;
      const current = worker;
      const facts = () => ({
        rid,
        worker: current.url,
        failovers,
        engineMs: performance.now() - started,
      });
      current.running++;
      try {
        const generation = await worker.engine.generate({
          ...attempt,
          ...(onTokens ? { onTokens: (tokens) => (shown.add(tokens), onTokens(tokens)) } : {}),
          // As this attempt's generation will be returned, once its rows are read.
          ...(onAnswered
            ? { onAnswered: (early) => onAnswered(joined(shown, told, early, facts())) }
            : {}),
        });
        this.#count(worker, attempt.inputIds as PromptIds, generation);
        return joined(shown, told, generation, facts());
      } catch (error) {
        if (!(error instanceof EngineUnavailableError) || req.signal?.aborted) throw error;
        this.#down(worker);
        // A generation that showed nothing starts again; one that showed tokens (all of them
        // sampled and sent) goes on after them.
        const next = failovers < this.#workers.length ? this.#moved(req, worker) : null;
        if (next === null || shown.count >= req.sampling.max_new_tokens) throw error;
        this.#metrics?.engineFailovers.inc();
        worker = next;
      } finally {
        current.running--;
      }
    }
  }

  async delivered(): Promise<void> {
    await Promise.all(this.#workers.map((worker) => worker.engine.delivered?.()));
  }

  versionSet(version: string): string {
    const previous = this.#workers.map((worker) => worker.engine.versionSet?.(version));
    return previous.find((v) => v !== undefined) ?? "default";
  }

  release(chains: readonly string[]): void {
    for (const chain of chains) this.#unpin(chain);
    for (const worker of this.#workers) worker.engine.release?.(chains);
  }

  async close(): Promise<void> {
    if (this.#closed) return;
    this.#closed = true;
    clearInterval(this.#timer);
    await this.#checking;
    await Promise.all(this.#workers.map((worker) => worker.engine.close()));
  }

  /** The worker `req` goes to: its chain's, else a new placement (pinned). */
  #place(req: GenerateRequest): Placed {
    const chain = req.chain;
    if (chain) {
      const pinned = this.#pins.get(chain.id);
      if (pinned?.healthy) {
        this.#pins.delete(chain.id);
        this.#pins.set(chain.id, pinned);
        return pinned;
      }
      if (pinned) this.#unpin(chain.id);
    }
    const near = chain?.near ? this.#pins.get(chain.near) : undefined;
    const chosen = this.#choose(req.routingKey ?? chain?.id ?? req.rid ?? "", near);
    if (chain) this.#pin(chain.id, chosen);
    return chosen;
  }

  /** Places `req`'s chain again after `dead` failed it; `null` when no worker is healthy. */
  #moved(req: GenerateRequest, dead: Placed): Placed | null {
    if (!this.#workers.some((worker) => worker.healthy && worker !== dead)) return null;
    if (req.chain) this.#unpin(req.chain.id);
    return this.#place(req);
  }

  /**
   * The first worker on the ring from `key`'s point that is healthy and under the load bound
   * (`near` first, when it is both); with no worker healthy, the ring's first (it fails fast).
   */
  #choose(key: string, near: Placed | undefined): Placed {
    const healthy = this.#workers.filter((worker) => worker.healthy).length;
    const point = hash32(key);
    let at = lowerBound(this.#ring, point);
    if (healthy === 0) return this.#workers[this.#ring[at % this.#ring.length][1]];
    const running = this.#workers.reduce((sum, worker) => sum + worker.running, 0);
    const bound = Math.ceil(LOAD_FACTOR * (running + 1) / healthy);
    if (near?.healthy && near.running < bound) return near;
    let fallback: Placed | null = null;
    for (let n = 0; n < this.#ring.length; n++, at++) {
      const worker = this.#workers[this.#ring[at % this.#ring.length][1]];
      if (!worker.healthy) continue;
      if (worker.running < bound) return worker;
      fallback ??= worker;
    }
    return fallback!;
  }

  #pin(chain: string, worker: Placed): void {
    this.#pins.set(chain, worker);
    worker.chains++;
    if (this.#pins.size > PINS_KEPT) this.#unpin(this.#pins.keys().next().value!);
  }

  #unpin(chain: string): void {
    const worker = this.#pins.get(chain);
    if (!worker) return;
    this.#pins.delete(chain);
    worker.chains--;
  }

  #down(worker: Placed): void {
    if (!worker.healthy) return;
    worker.healthy = false;
    this.#metrics?.engineWorkerFailures.inc(worker.label);
  }

  /** Counts a generation's prompt on its worker: read, served from cache, computed. */
  #count(worker: Placed, prompt: PromptIds, generation: Generation): void {
    const metrics = this.#metrics;
    if (!metrics) return;
    const cached = generation.cachedTokens ?? 0;
    metrics.enginePromptTokens.add(prompt.length, worker.label);
    metrics.engineCachedTokens.add(cached, worker.label);
    metrics.enginePrefillTokens.add(Math.max(0, prompt.length - cached), worker.label);
  }
}

/** The output a generation has shown its streaming client, across the workers it ran on. */
class Shown {
  readonly ids: number[] = [];
  readonly logprobs: number[] = [];
  readonly tops: [number, number][][] = [];
  /** The weight version of each shown token, run-length. */
  readonly spans: VersionSpan[] = [];

  constructor(readonly withTops: boolean) {}

  get count(): number {
    return this.ids.length;
  }

  add(tokens: SampledTokens): void {
    const start = this.ids.length;
    // One at a time: a chunk may hold more tokens than a call takes arguments.
    for (let i = 0; i < tokens.ids.length; i++) {
      this.ids.push(tokens.ids[i]);
      this.logprobs.push(tokens.logprobs[i]);
      if (this.withTops) this.tops.push((tokens.tops?.[i] ?? []).map(([id, lp]) => [id, lp]));
    }
    const last = this.spans.at(-1);
    if (last?.version === tokens.weightVersion) {
      this.spans[this.spans.length - 1] = { ...last, end: this.ids.length };
    } else this.spans.push({ version: tokens.weightVersion, start, end: this.ids.length });
  }
}

/**
 * The whole generation: the output shown before the last worker took over (`told` tokens),
 * then that worker's generation.
 */
function joined<G extends Omit<Generation, "routes">>(
  shown: Shown,
  told: number,
  generation: G,
  facts: { rid: string; worker: string; failovers: number; engineMs: number },
): G {
  if (told === 0) return { ...generation, ...facts };
  const spans: { version: string; start: number; end: number }[] = shown.spans
    .filter((span) => span.start < told)
    .map((span) => ({ ...span, end: Math.min(span.end, told) }));
  for (const span of generation.versionSpans) {
    const last = spans.at(-1);
    if (last?.version === span.version) last.end = told + span.end;
    else spans.push({ version: span.version, start: told + span.start, end: told + span.end });
  }
  return {
    ...generation,
    ...facts,
    outputIds: [...shown.ids.slice(0, told), ...generation.outputIds],
    logprobs: [...shown.logprobs.slice(0, told), ...generation.logprobs],
    ...(generation.topLogprobs
      ? { topLogprobs: [...shown.tops.slice(0, told), ...generation.topLogprobs] }
      : {}),
    versionSpans: spans,
    weightVersions: spans.map((span) => span.version)
      .filter((version, i, all) => all[i - 1] !== version),
  };
}

/** The first ring point at or after `point` (the ring's length past the last). */
function lowerBound(ring: readonly (readonly [number, number])[], point: number): number {
  let lo = 0;
  let hi = ring.length;
  while (lo < hi) {
    const mid = (lo + hi) >>> 1;
    if (ring[mid][0] < point) lo = mid + 1;
    else hi = mid;
  }
  return lo;
}

/** The first 32 bits of `text`'s SHA-256: a ring point. */
function hash32(text: string): number {
  return createHash("sha256").update(text).digest().readUInt32BE(0);
}
