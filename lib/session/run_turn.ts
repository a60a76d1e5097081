/**
 * One turn of a session, protocol-neutral, as a list of named stages: prepare (route the request
 * to its chain and take the chain's lease, `prepare_turn.ts`), then, for a turn to generate —
 * release the chains that ended (`stages/release_ended.ts`) → generate, streaming the output
 * live when asked (`stages/generate.ts`) → settle the output: parse it, set its flags
 * (`stages/settle_output.ts`; with R3 and no stream, while the engine HTTP worker still decodes
 * the routed experts) → settle the routes (`stages/settle_routes.ts`) → the adapter's reply →
 * build the record, a pure function (`stages/build_record.ts`) → commit: the turn's blobs, then
 * one atomic commit (`stages/commit.ts`) → cache the chain and count the turn
 * (`stages/cache_and_count.ts`). A retry is answered from its recorded turn (`replay_turn.ts`).
 * The reply is sent only once the turn is recorded (T1, T5); chains of one session (sub-agents)
 * generate in parallel.
 *
 * {@linkcode startTurn} is the one entry point: it resolves once everything that can refuse the
 * request has happened (so a streaming caller can still answer with an HTTP status), and hands
 * back the reply's head, its completion and a cancel.
 *
 * @module
 */
import type { RoundtripPolicy } from "../config/mod.ts";
import { type Engine, type MoeShape, newRid } from "../engine/mod.ts";
import { codeOf } from "../errors/mod.ts";
import type { Dispatches } from "./dispatches.ts";
import type { ImageBytes } from "./image_bytes.ts";
import { OutputFeed } from "./output_feed.ts";
import {
  type PrepareDeps,
  type PreparedGeneration,
  type PreparedTurn,
  prepareTurn,
} from "./prepare_turn.ts";
import type { SessionRecord } from "./records.ts";
import { recordedReply } from "./replay_turn.ts";
import { route } from "./route.ts";
import { promptLength } from "./routed_turn.ts";
import { noteEngineFailure } from "./session_store.ts";
import { buildTurnRecord } from "./stages/build_record.ts";
import { cacheAndCount } from "./stages/cache_and_count.ts";
import { commitRecord } from "./stages/commit.ts";
import { generateOutput } from "./stages/generate.ts";
import { releaseEnded } from "./stages/release_ended.ts";
import { EarlySettle, settleOutput } from "./stages/settle_output.ts";
import { settleRoutes } from "./stages/settle_routes.ts";
import type { TurnInput } from "./turn_input.ts";
import type { TurnLoad } from "./turn_load.ts";

/** What a turn needs from the outside world. */
export interface TurnDeps extends PrepareDeps {
  readonly engine: Engine;
  readonly roundtripPolicy: RoundtripPolicy;
  /** Counts this process's running turns (what `adaptiveEncoder` asks); none without it. */
  readonly load?: TurnLoad;
  /** Sub-agents by their dispatching call, to let a finished one's engine session go. */
  readonly dispatches?: Dispatches;
  /** Bytes of images seen in turns, for the engine calls of later turns. */
  readonly imageBytes?: ImageBytes;
  /** The served model's MoE shape when its routed experts are recorded (`ROUTED_EXPERTS`). */
  readonly moe?: MoeShape;
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
 * without taking a lease or writing anything ({@linkcode probeTurn}). When `signal` aborts (the
 * client left) the turn is cancelled. `options.session` is the session's entry as the caller has
 * just read it (checking the token): the common turn is routed on it instead of reading it again
 * under the session's lease.
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
 * @throws what `prepareTurn` throws.
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
  const live = options.live === true && prepared.route.kind !== "replay";
  const head = {
    rid: prepared.rid,
    promptTokens: prepared.promptTokens,
    // A live stream shows them first; otherwise the reply carries them.
    promptIds: live && input.tokenData?.promptIds && prepared.route.kind !== "replay"
      ? prepared.route.prompt.ids.toArray()
      : null,
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
  const routed = await route(deps, input, { on: "dry" }, { contextLength: deps.contextLength });
  return {
    rid: routed.kind === "replay" ? routed.record.rid : newRid(),
    promptTokens: promptLength(routed),
    promptIds: live && routed.kind !== "replay" && input.tokenData?.promptIds
      ? routed.prompt.ids.toArray()
      : null,
    completion: null,
    feed: null,
    cancel: () => {},
    cancelled: false,
  };
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
  return promptLength(await route(deps, input, { on: "dry" }, { contextLength: Infinity }));
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
    if (prepared.lease === null) return await recordedReply(deps, prepared.input, prepared.route);
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
 * The stages of a generated turn, in order. With a `feed`, the output is parsed as it is sampled
 * and its events fed on; the reply is still parsed from the whole output, which the events add
 * up to.
 */
async function generateAndRecord<Reply>(
  deps: TurnDeps,
  turn: PreparedGeneration<Reply>,
  feed: OutputFeed | null,
  signal?: AbortSignal,
): Promise<Reply> {
  const { input, route: routed } = turn;
  releaseEnded(deps, routed);
  const options = {
    roundtripPolicy: deps.roundtripPolicy,
    startsInReasoning: routed.prompt.startsInReasoning,
    tools: input.toolSchemas,
  };
  // Its routed experts are decoded after the answer is passed on: settled meanwhile (unstreamed).
  const early = deps.moe && feed === null ? new EarlySettle(deps.tokenizer, options) : undefined;
  const { generation, live } = await generateOutput(deps, turn, feed, signal, early);
  const settled = early ? early.take(generation) : settleOutput(deps.tokenizer, generation, {
    ...options,
    live: feed && live ? { parse: live, feed } : null,
  });
  const routes = deps.moe
    ? await settleRoutes({ kv: deps.kv, moe: deps.moe }, {
      sessionId: routed.sessionId,
      chainId: routed.chainId,
      promptLength: routed.prompt.ids.length,
      outputLength: settled.output.length,
      recorded: routed.prompt.routes,
      reported: generation.routes,
    })
    : null;
  if (routes?.routes.mismatched) settled.flags.push("routing_mismatch");
  const { reply, identity } = input.reply({
    rid: turn.rid,
    blocks: settled.blocks,
    end: settled.end,
    inputTokens: turn.promptTokens,
    outputTokens: settled.output.length,
    outputIds: settled.output,
    logprobs: generation.logprobs,
    ...(generation.topLogprobs ? { topLogprobs: generation.topLogprobs } : {}),
    ...(input.tokenData?.promptIds ? { promptIds: routed.prompt.ids.toArray() } : {}),
  });
  const record = buildTurnRecord({
    rid: turn.rid,
    route: routed,
    generation,
    settled,
    routes,
    request: {
      model: input.model,
      toolNames: input.toolNames,
      messageCount: input.messageIdentities.length,
    },
    replyIdentity: identity,
    now: Date.now(),
    timings: { renderMs: turn.renderMs, totalMs: performance.now() - turn.started },
  });
  signal?.throwIfAborted();
  const versionstamp = await commitRecord(deps, routed, turn.lease, record);
  cacheAndCount(deps, {
    route: routed,
    settled,
    record,
    versionstamp,
    conversation: { start: input.startIdentity, messages: [...input.messageIdentities, identity] },
    engineMs: generation.engineMs,
    started: turn.started,
  });
  return reply;
}
