/**
 * One turn of a session, protocol-neutral: route the request to its chain under the session's
 * lease, take the chain's lease, build the prompt from the chain's recorded tokens plus the delta
 * of the new messages (T2, T3), generate, parse the sampled tokens (T6), and record the turn in
 * one atomic commit (T1, T5) before answering. A retried request is answered from its recorded
 * turn. Chains of one session (sub-agents) generate in parallel.
 *
 * {@linkcode startTurn} is the one entry point: it resolves once everything that can refuse the
 * request has happened (so a streaming caller can still answer with an HTTP status), and hands
 * back the reply's head, its completion and a cancel.
 *
 * @module
 */
import {
  type ChainHeader,
  chainRef,
  closingTokens,
  survivesRoundTrip,
  type TurnEnd,
  turnEnd,
  type TurnRecord,
} from "../chain/mod.ts";
import { extendDigest } from "../chat/mod.ts";
import { codeOf } from "../errors/mod.ts";
import {
  type Engine,
  type EngineImage,
  newRid,
  type SamplingParams,
  samplingParams,
} from "../engine/mod.ts";
import type { ImageBytes } from "./image_bytes.ts";
import { writeImages } from "./image_store.ts";
import type { RoundtripPolicy } from "../config/mod.ts";
import {
  acquireLease,
  encodeTurnTokens,
  handOverLease,
  type HeldLease,
  keys,
  leaseIfUnchanged,
  type LeaseOptions,
  type Store,
  tryLease,
} from "../kv/mod.ts";
import {
  commitTurn,
  countReplay,
  getChain,
  noteEngineFailure,
  readAllTurns,
  readChainTokens,
  readTurnTokens,
  writeTurnMessages,
} from "./session_store.ts";
import type { GatewayMetrics, TurnFlag } from "../metrics/mod.ts";
import { parseOutput } from "../output/mod.ts";
import { EncodeCancelledError } from "../tokenizer/mod.ts";
import { ChainConflictError } from "./errors.ts";
import type { TurnLoad } from "./turn_load.ts";
import type { Dispatches } from "./dispatches.ts";
import { LiveOutput } from "./live_output.ts";
import { OutputFeed } from "./output_feed.ts";
import { parseTurnOutput, turnText } from "./output.ts";
import type { SessionRecord } from "./records.ts";
import { type RouteDeps, type RoutedTurn, routeExtension, routeTurn } from "./route.ts";
import { cacheKey } from "./route_snapshot.ts";
import type { TurnInput } from "./turn_input.ts";

/** What a turn needs from the outside world. */
export interface TurnDeps extends RouteDeps {
  readonly engine: Engine;
  readonly contextLength: number;
  readonly roundtripPolicy: RoundtripPolicy;
  /** How long a lease lasts and how long a request waits for a busy session or chain. */
  readonly lease: Pick<LeaseOptions, "ttlMs" | "waitMs" | "now">;
  /** This process, as it names itself in the leases it holds. */
  readonly holder: string;
  /** Counts this process's running turns (what `adaptiveEncoder` asks); none without it. */
  readonly load?: TurnLoad;
  /** Sub-agents by their dispatching call, to let a finished one's engine session go. */
  readonly dispatches?: Dispatches;
  /** Bytes of images seen in turns, for the engine calls of later turns. */
  readonly imageBytes?: ImageBytes;
}

/** A turn ready to generate (or to replay), holding its chain's lease until completed. */
interface PreparedTurn<Reply> {
  readonly input: TurnInput<Reply>;
  readonly route: RoutedTurn;
  /** Engine request id of the turn, known before generation so a stream can name its message. */
  readonly rid: string;
  /** Tokens in the prompt (for a replay, in the recorded turn's prompt). */
  readonly promptTokens: number;
  readonly sampling: SamplingParams;
  /** @internal The chain's lease; `null` for a replay, which needs none. */
  readonly lease: HeldLease | null;
  /** @internal */
  readonly started: number;
  /** @internal */
  readonly renderMs: number;
}

/**
 * Routes the request and takes its chain's lease, so turns of one chain run one at a time while
 * other chains of the session generate in parallel. The common turn (the main agent extending its
 * chain) is routed on the session entry the caller read (`session`) and takes the chain's lease in
 * one commit that checks nothing moved. Otherwise, or when something did, the request is routed
 * under the session's lease (registering a new chain if it starts one). A request whose chain is
 * busy waits for it and is routed again (it may have become a replay). Throws before anything is
 * generated, holding no lease; stops waiting when `signal` aborts.
 *
 * @throws {LeaseTimeoutError} when the session or the chain stays busy past the wait;
 * {SessionNotFoundError}, {SessionClosedError}, {ContextOverflowError}, and the adapter's own
 * errors from `lower` and `verifyHistory`.
 */
async function prepareTurn<Reply>(
  deps: TurnDeps,
  input: TurnInput<Reply>,
  signal?: AbortSignal,
  session?: Deno.KvEntry<SessionRecord>,
): Promise<PreparedTurn<Reply>> {
  const started = performance.now();
  const deadline = Date.now() + deps.lease.waitMs;
  const holder = `${deps.holder}/${crypto.randomUUID()}`;
  const lease: LeaseOptions = { ...deps.lease, metrics: deps.metrics };
  const wait = () => ({ ...lease, waitMs: Math.max(0, deadline - Date.now()), signal });
  const prepared = (route: RoutedTurn, chainLease: HeldLease | null): PreparedTurn<Reply> => {
    const promptTokens = route.replay ? route.replay.record.inputLen : route.prompt.length;
    return {
      input,
      route,
      rid: route.replay?.record.rid ?? newRid(),
      promptTokens,
      sampling: samplingParams(input.sampling, {
        promptLength: promptTokens,
        contextLength: deps.contextLength,
        stopIds: deps.tokenizer.ending.stopIds,
      }),
      lease: chainLease,
      started,
      renderMs: performance.now() - started,
    };
  };
  if (session) {
    const quick = await extendWithoutSessionLease(deps, input, session, holder, lease, signal);
    if (quick) return prepared(quick.route, quick.lease);
  }
  let waited: { chainId: string; lease: HeldLease } | null = null;
  for (;;) {
    const sessionLease = await acquireLease(deps.kv, keys.lease(input.sessionId), holder, wait());
    let route: RoutedTurn;
    let chainLease: HeldLease | null = null;
    try {
      route = await routeTurn(deps, input, {
        register: true,
        contextLength: deps.contextLength,
        signal,
      });
      if (waited && (route.replay || waited.chainId !== route.chainId)) {
        await waited.lease.release();
        waited = null;
      }
      if (!route.replay) {
        // Usually one commit releases the session and takes the chain, if the chain stood still.
        chainLease = waited?.lease ??
          await handOverLease(
            deps.kv,
            sessionLease,
            keys.chainLease(input.sessionId, route.chainId),
            holder,
            lease,
            [route.chain],
          ) ??
          await takeChain(deps, route, holder, lease);
        waited = null;
      }
    } catch (error) {
      await waited?.lease.release();
      throw error;
    } finally {
      await sessionLease.release();
    }
    if (route.replay || chainLease) return prepared(route, chainLease);
    // The chain is busy: wait for it outside the session's lease, then route again.
    const chainKey = keys.chainLease(input.sessionId, route.chainId);
    waited = {
      chainId: route.chainId,
      lease: await acquireLease(deps.kv, chainKey, holder, wait()),
    };
  }
}

/**
 * The common turn in one KV operation (a commit taking its chain's lease) instead of four: routed
 * on `session` and the chain's head this process cached, without the session's lease, which the
 * commit checks is free (a close or a registration holds it), along with the session and the
 * chain as routed on. A head that moved (another process's turn) fails the commit: the chain is
 * read and the turn routed on it, once. `null` when the plan needs more, or anything else moved:
 * the caller routes under the session's lease. An error judged here is left for that route to
 * judge again.
 */
async function extendWithoutSessionLease<Reply>(
  deps: TurnDeps,
  input: TurnInput<Reply>,
  session: Deno.KvEntry<SessionRecord>,
  holder: string,
  lease: LeaseOptions,
  signal?: AbortSignal,
): Promise<{ route: RoutedTurn; lease: HeldLease } | null> {
  const route = (head?: Deno.KvEntryMaybe<ChainHeader>) =>
    routeExtension(deps, input, { session, contextLength: deps.contextLength, signal, head })
      .catch((error) => {
        // A client that left is not judged again; anything else is, under the session's lease.
        if (error instanceof EncodeCancelledError) throw error;
        return null;
      });
  const take = (reads: Deno.AtomicCheck[], chainId: string) =>
    leaseIfUnchanged(deps.kv, keys.chainLease(input.sessionId, chainId), holder, lease, [
      ...reads,
      { key: keys.lease(input.sessionId), versionstamp: null },
    ]);
  const routed = await route();
  if (routed === null) return null;
  const chainLease = await take(routed.reads, routed.route.chainId);
  if (chainLease) return { route: routed.route, lease: chainLease };
  if (!routed.unread) return null;
  // Routed on the head cached here: if another process moved it, route again on it.
  const head = await getChain(deps.kv, input.sessionId, routed.route.chainId);
  if (head.versionstamp === routed.route.chain.versionstamp) return null; // busy, or the session moved
  const again = await route(head);
  if (again === null) return null;
  const retaken = await take(again.reads, again.route.chainId);
  return retaken ? { route: again.route, lease: retaken } : null;
}

/** The chain's lease if it is free and the chain has not moved since it was routed. */
async function takeChain(
  deps: TurnDeps,
  route: RoutedTurn,
  holder: string,
  lease: LeaseOptions,
): Promise<HeldLease | null> {
  const sessionId = route.sessionId;
  const attempt = await tryLease(deps.kv, keys.chainLease(sessionId, route.chainId), holder, lease);
  if (!("lease" in attempt)) return null;
  const now = await getChain(deps.kv, sessionId, route.chainId);
  if (now.versionstamp === route.chain.versionstamp) return attempt.lease;
  await attempt.lease.release();
  return null;
}

/** A turn under way, as a handler needs it. */
export interface StartedTurn<Reply> {
  /** Engine request id (the reply's id derives from it), known before anything is generated. */
  readonly rid: string;
  /** Tokens of the prompt the engine reads (for a replay, of the recorded turn's prompt). */
  readonly promptTokens: number;
  /** The reply once generated and recorded; `null` when the request asked for no tokens. */
  readonly completion: Promise<Reply> | null;
  /**
   * The output as it is sampled, when the caller asked to stream it live; `null` otherwise, and
   * for a replay (its reply is whole at once).
   */
  readonly feed: OutputFeed | null;
  /** The prompt's token ids, when a live stream shows them before the reply. */
  readonly promptIds: readonly number[] | null;
  /** Stops the turn: the engine request is aborted and nothing is recorded. */
  cancel(reason?: unknown): void;
  /** True once the turn was cancelled (by `cancel` or by the caller's signal). */
  readonly cancelled: boolean;
}

/**
 * The one entry point of a turn: routes it and takes its chain's lease (everything that can
 * refuse the request happens before this resolves), then generates and records in the
 * background. A request for no tokens (`max_tokens: 0`, a context probe) is routed and counted
 * without taking a lease or writing anything ({@linkcode probeTurn}). When `signal` aborts (the client left) the turn is cancelled. `options.session` is the
 * session's entry as the caller has just read it (checking the token): the common turn is routed
 * on it instead of reading it again under the session's lease.
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { buildDeps } from "../../functions/_deps.ts";
 * import { anthropicTurnInput } from "../anthropic/mod.ts";
 * import { resolveConfig } from "../config/mod.ts";
 * import { startTurn } from "./run_turn.ts";
 * import { openSession } from "./session.ts";
 * // No SGLANG_URL: the built-in scripted engine answers.
 * const deps = await buildDeps(resolveConfig({ KV_PATH: ":memory:" }));
 * const { session } = await openSession(deps.kv);
 * const input = anthropicTurnInput(
 *   { model: "m", max_tokens: 64, messages: [{ role: "user", content: "hi" }] },
 *   { sessionId: session.id, signingSecret: "secret" },
 * );
 * const turn = await startTurn(deps, input);
 * const reply = await turn.completion;
 * assert.equal(reply?.type, "message");
 * await deps.close();
 * ```
 * @throws what {@linkcode prepareTurn} throws.
 */
export async function startTurn<Reply>(
  deps: TurnDeps,
  input: TurnInput<Reply>,
  signal?: AbortSignal,
  options: { live?: boolean; session?: Deno.KvEntry<SessionRecord> } = {},
): Promise<StartedTurn<Reply>> {
  if (input.sampling.maxTokens === 0) return await probeTurn(deps, input, options.live === true);
  const leave = deps.load?.enter() ?? (() => {});
  let prepared: PreparedTurn<Reply>;
  try {
    prepared = await prepareTurn(deps, input, signal, options.session);
  } catch (error) {
    leave();
    throw error;
  }
  const abort = new AbortController();
  const live = options.live === true && prepared.route.replay === null;
  const head = {
    rid: prepared.rid,
    promptTokens: prepared.promptTokens,
    // A live stream shows them first; otherwise the reply carries them.
    promptIds: live && input.tokenData?.promptIds ? prepared.route.prompt.toArray() : null,
  };
  const feed = live ? new OutputFeed() : null;
  const cancel = (reason?: unknown) => abort.abort(reason);
  if (signal?.aborted) cancel(signal.reason);
  signal?.addEventListener("abort", () => cancel(signal.reason), { once: true });
  return {
    ...head,
    completion: completeTurn(deps, prepared, feed, abort.signal, leave),
    feed,
    cancel,
    get cancelled() {
      return abort.signal.aborted;
    },
  };
}

/**
 * A request for no tokens (`max_tokens: 0`, a context probe): routed and counted as the next
 * turn would be, refused as it would be (a closed session, a prompt past the context), and
 * writing nothing — no chain registered for a new agent, no lease taken.
 */
async function probeTurn<Reply>(
  deps: TurnDeps,
  input: TurnInput<Reply>,
  live: boolean,
): Promise<StartedTurn<Reply>> {
  const route = await routeTurn(deps, input, {
    register: false,
    contextLength: deps.contextLength,
  });
  const replay = route.replay;
  return {
    rid: replay?.record.rid ?? newRid(),
    promptTokens: replay ? replay.record.inputLen : route.prompt.length,
    promptIds: live && !replay && input.tokenData?.promptIds ? route.prompt.toArray() : null,
    completion: null,
    feed: null,
    cancel: () => {},
    cancelled: false,
  };
}

/**
 * Generates the turn and records it, then returns the reply; a replay returns the recorded
 * reply. When `signal` aborts, the engine request is aborted and nothing is recorded. The chain's
 * lease is released in every case.
 *
 * @throws {ChainConflictError} when the chain or its lease moved on during generation, and the
 * engine's errors.
 */
async function completeTurn<Reply>(
  deps: TurnDeps,
  prepared: PreparedTurn<Reply>,
  feed: OutputFeed | null,
  signal?: AbortSignal,
  leave?: () => void,
): Promise<Reply> {
  try {
    const replay = prepared.route.replay;
    if (replay) return await recordedReply(deps, prepared.input, replay);
    return await generateAndRecord(deps, prepared, feed, signal);
  } catch (error) {
    if (signal?.aborted) deps.metrics?.turnCancels.inc();
    // Kept for a rollout to tell an agent that gave up on the engine from one the model failed.
    if (codeOf(error) === "engine_unavailable") {
      await noteEngineFailure(deps.kv, prepared.input.sessionId).catch(() => {});
    }
    throw error;
  } finally {
    leave?.();
    await prepared.lease?.release();
  }
}

/**
 * Generates the turn and records it. With a `feed`, the output is parsed as it is sampled and
 * its events fed on; the reply is still parsed from the whole output, which the events add up
 * to.
 */
async function generateAndRecord<Reply>(
  deps: TurnDeps,
  prepared: PreparedTurn<Reply>,
  feed: OutputFeed | null,
  signal?: AbortSignal,
): Promise<Reply> {
  const { input, route } = prepared;
  const { tokenizer } = deps;
  const live = feed
    ? new LiveOutput(tokenizer, {
      startsInReasoning: route.startsInReasoning,
      tools: input.toolSchemas,
      stop: prepared.sampling.stop ?? [],
    })
    : null;
  // Chains that will not continue let their engine sessions and placements go: a conversation
  // this one wiped, and sub-agents whose reports this turn's new messages carry.
  if (deps.engine.release) {
    const ended = route.retired ? [chainRef(input.sessionId, route.retired)] : [];
    const dispatch = route.kind === "subagent" ? route.chain.value?.dispatch : null;
    if (dispatch) {
      deps.dispatches?.add(input.sessionId, dispatch, chainRef(input.sessionId, route.chainId));
    }
    if (route.messages) {
      ended.push(...(deps.dispatches?.answered(input.sessionId, route.messages.messages) ?? []));
    }
    if (ended.length > 0) deps.engine.release(ended);
  }
  const images = route.promptImages.length > 0 ? engineImages(deps, input, route) : null;
  const generation = await deps.engine.generate({
    rid: prepared.rid,
    inputIds: route.prompt,
    ...(images ? { images } : {}),
    sampling: prepared.sampling,
    ...(input.tokenData?.topLogprobs ? { topLogprobs: input.tokenData.topLogprobs } : {}),
    signal,
    ...(feed && live ? { onTokens: (tokens) => feed.push(live.push(tokens.ids)) } : {}),
    // A session's chains share their system prompt and tools, and a sub-agent its parent's
    // context: one key keeps them on the worker that has those cached.
    routingKey: input.sessionId,
    chain: {
      id: chainRef(input.sessionId, route.chainId),
      near: route.chain.value?.parent ? chainRef(input.sessionId, route.chain.value.parent) : null,
      // Only a prompt that extends the chain's last turn as it was may continue its engine session.
      after: route.kind === "append" ? route.base.lastRid : null,
    },
  });
  signal?.throwIfAborted();

  const output = generation.outputIds;
  const end = turnEnd(generation.finish);
  const closing = closingTokens(output, tokenizer.ending);
  const flags: TurnFlag[] = [];
  let masked = false;
  if (!survivesRoundTrip(output, tokenizer)) {
    flags.push("roundtrip_mismatch");
    masked = deps.roundtripPolicy === "mask";
  }
  const text = turnText(tokenizer, output, end);
  if (feed && live) {
    const settled = live.end(text);
    feed.push(settled.events);
    if (!settled.exact) flags.push("stream_diverged");
  }
  const parsed = parseOutput(text, {
    startsInReasoning: route.startsInReasoning,
    tools: input.toolSchemas,
    formats: tokenizer.formats,
  });
  if (parsed.illFormed.length > 0) flags.push("ill_formed");
  if (generation.aborts > 0) flags.push("engine_aborted");
  if ((generation.failovers ?? 0) > 0) flags.push("engine_failover");
  if (generation.sessionResent) flags.push("session_resent");
  if (masked) flags.push("masked");
  const reasoning = parsed.blocks.some((block) => block.type === "thinking");
  const { reply, identity } = input.reply({
    rid: prepared.rid,
    blocks: parsed.blocks,
    end,
    inputTokens: prepared.promptTokens,
    outputTokens: output.length,
    outputIds: output,
    logprobs: generation.logprobs,
    ...(generation.topLogprobs ? { topLogprobs: generation.topLogprobs } : {}),
    ...(input.tokenData?.promptIds ? { promptIds: route.prompt.toArray() } : {}),
  });

  const messageCount = input.messageIdentities.length + 1;
  const digest = extendDigest(route.requestDigest, identity);
  const now = Date.now();
  const chunks = encodeTurnTokens({
    delta: route.delta,
    output,
    logprobs: generation.logprobs,
    closing,
  });
  const index = route.base.turnCount;
  // The turn's new images, for the exports: written before the commit, like the turn's chunks.
  if (route.images.length > 0) {
    await writeImages(deps.kv, input.sessionId, route.images, route.imageData);
  }
  const messageChunks = route.recordMessages && route.messages
    ? await writeTurnMessages(
      deps.kv,
      { sessionId: input.sessionId, chainId: route.chainId, index, rid: prepared.rid },
      route.messages,
    )
    : 0;
  const turn: TurnRecord = {
    index,
    rid: prepared.rid,
    parent: route.base.lastRid,
    inputLen: prepared.promptTokens,
    deltaLen: route.delta.length,
    outputLen: output.length,
    closingLen: closing.length,
    finishReason: end.reason,
    stopSequence: end.stopSequence,
    flags,
    route: route.kind,
    toolCalls: parsed.blocks.filter((block) => block.type === "tool_call").length,
    masked,
    weightVersions: generation.weightVersions,
    versionSpans: generation.versionSpans,
    aborts: generation.aborts,
    ...(generation.cachedTokens === undefined ? {} : { cachedTokens: generation.cachedTokens }),
    ...(generation.worker === undefined ? {} : { worker: generation.worker }),
    ...(route.images.length > 0 ? { images: route.images } : {}),
    startsInReasoning: route.startsInReasoning,
    reasoning,
    toolNames: input.toolNames,
    model: input.model,
    messageCount,
    digest,
    requestDigest: route.requestDigest,
    bodyDigest: route.bodyDigest,
    chunks: chunks.length,
    ...(messageChunks > 0 ? { messageChunks } : {}),
    createdAt: now,
    timings: {
      renderMs: prepared.renderMs,
      engineMs: generation.engineMs,
      engineReportedMs: generation.engineReportedMs,
      totalMs: performance.now() - prepared.started,
    },
  };
  const header: ChainHeader = {
    ...route.chain.value!,
    tools: route.tools,
    reasoning: route.base.reasoning || reasoning,
    turnCount: turn.index + 1,
    tokenCount: prepared.promptTokens + output.length + closing.length,
    messageCount,
    digest,
    lastRid: turn.rid,
    updatedAt: now,
  };
  signal?.throwIfAborted();
  const lease = prepared.lease!;
  await lease.pause();
  const versionstamp = await commitTurn(deps.kv, {
    chain: route.chain,
    header,
    turn,
    chunks,
    lease: lease.entry,
    metrics: deps.metrics,
  });
  if (versionstamp === null) throw new ChainConflictError(input.sessionId, route.chainId);
  lease.released(); // the commit deleted it
  deps.cache.put(cacheKey(header), versionstamp, {
    header,
    prompt: route.prompt.concat([...output, ...closing]),
    ...(route.promptImages.length > 0 ? { images: route.promptImages } : {}),
    conversation: { start: input.startIdentity, messages: [...input.messageIdentities, identity] },
  });
  if (deps.metrics) countRecorded(deps.metrics, prepared, turn, flags, generation.engineMs);
  return reply;
}

/** Counts a turn just recorded: its route, tokens, flags, and where its time went. */
function countRecorded<Reply>(
  metrics: GatewayMetrics,
  prepared: PreparedTurn<Reply>,
  turn: TurnRecord,
  flags: readonly TurnFlag[],
  engineMs: number,
): void {
  metrics.turns.inc(prepared.route.kind);
  metrics.promptTokens.add(turn.inputLen);
  if (turn.cachedTokens !== undefined) metrics.cachedTokens.add(turn.cachedTokens);
  metrics.sampledTokens.add(turn.outputLen);
  for (const flag of flags) metrics.turnFlags.inc(flag);
  metrics.engineSeconds.observe(engineMs / 1000);
  metrics.gatewaySeconds.observe((performance.now() - prepared.started - engineMs) / 1000);
}

/** The reply a recorded turn gave, rebuilt from its sampled tokens: same ids, same content. */
async function recordedReply<Reply>(
  deps: TurnDeps,
  input: TurnInput<Reply>,
  replay: NonNullable<RoutedTurn["replay"]>,
): Promise<Reply> {
  const { record } = replay;
  // Bookkeeping for the viewer: a count that cannot be written never fails the retry it counts.
  await countReplay(deps.kv, input.sessionId, replay.chainId, record.rid).catch((error) =>
    console.warn(`Cannot count a replay of turn ${record.rid}:`, error)
  );
  const tokens = await readTurnTokens(deps.kv, input.sessionId, replay.chainId, record);
  const end: TurnEnd = { reason: record.finishReason, stopSequence: record.stopSequence };
  const output = Array.from(tokens.output);
  // The same request as the recorded one: its tools, schemas included, are the recorded ones.
  const parsed = parseTurnOutput(
    deps.tokenizer,
    output,
    end,
    record.startsInReasoning,
    input.toolSchemas,
  );
  const { reply } = input.reply({
    rid: record.rid,
    blocks: parsed.blocks,
    end,
    inputTokens: record.inputLen,
    outputTokens: record.outputLen,
    outputIds: tokens.output,
    logprobs: tokens.logprobs,
    ...(input.tokenData?.promptIds
      ? { promptIds: await readTurnPrompt(deps.kv, input.sessionId, replay.chainId, record) }
      : {}),
  });
  deps.metrics?.turns.inc("replay");
  return reply;
}

/**
 * The prompt a recorded turn read: the tokens of its ancestors (through the parent links) and
 * its own delta. Reads the whole history: only a replay that asks for prompt ids needs it.
 *
 * @throws {Error} when a linked turn is missing or the tokens do not add up to the recorded
 * prompt length (a broken chain).
 */
async function readTurnPrompt(
  kv: Store,
  sessionId: string,
  chainId: string,
  record: TurnRecord,
): Promise<number[]> {
  const byRid = new Map(
    (await readAllTurns(kv, sessionId, chainId)).map((turn) => [turn.rid, turn]),
  );
  const lineage: TurnRecord[] = [];
  for (let turn: TurnRecord | undefined = record; turn; turn = byRid.get(turn.parent ?? "")) {
    lineage.unshift(turn);
    if (turn.parent === null) break;
  }
  let prompt: number[] = [];
  const tokens = await readChainTokens(kv, sessionId, chainId, lineage);
  lineage.forEach((turn, i) => {
    const { delta, output, closing } = tokens[i];
    const parts = turn === record ? [delta] : [delta, output, closing];
    prompt = prompt.concat(...parts.map((part) => Array.from(part)));
  });
  if (prompt.length !== record.inputLen) {
    throw new Error(
      `Cannot rebuild the prompt of turn ${record.index} of chain "${chainId}": ${prompt.length} tokens, recorded ${record.inputLen}`,
    );
  }
  return prompt;
}

/**
 * Tokens of the prompt this request would send the engine, as `usage.input_tokens` would report
 * them: the chain's tokens plus the delta when the request extends the session's chain, else the
 * template's rendering of the whole conversation. Takes no lease and writes nothing.
 */
export async function countPromptTokens<Reply>(
  deps: TurnDeps,
  input: TurnInput<Reply>,
  options: { sessionExists: boolean },
): Promise<number> {
  if (!options.sessionExists) {
    input.verifyHistory();
    return (await deps.encoder.renderPrompt(input.prompt())).tokens.length;
  }
  const route = await routeTurn(deps, input, { register: false });
  return route.replay ? route.replay.record.inputLen : route.prompt.length;
}

/**
 * Every image of the turn's prompt, in order, with its bytes: the delta's from the request as
 * lowered, the history's from this process's memory of them, else found in the request by digest
 * (it holds them all: its history matched the chain's). The delta's are remembered.
 *
 * @throws {Error} when the request does not hold an image its chain does, which routing rules out.
 */
function engineImages<Reply>(
  deps: TurnDeps,
  input: TurnInput<Reply>,
  route: RoutedTurn,
): EngineImage[] {
  for (const [digest, data] of route.imageData) deps.imageBytes?.remember(digest, data);
  return route.promptImages.map((image) => {
    const data = route.imageData.get(image.digest) ?? deps.imageBytes?.get(image.digest) ??
      input.imageData?.(image.digest);
    if (data === undefined) {
      throw new Error(`The request does not hold image ${image.digest} of its chain's prompt`);
    }
    deps.imageBytes?.remember(image.digest, data);
    return { mediaType: image.mediaType, data };
  });
}
