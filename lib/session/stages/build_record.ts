/**
 * The record stage, a pure function: a generated turn's record, its chain's next head, the
 * chunks of its tokens and of the request's messages (when the session keeps them), from what
 * routing, the engine and the settled output say — nothing read, nothing written, no clock read
 * (the caller gives the time).
 *
 * @module
 */
import type { ChainHeader, TurnRecord } from "../../chain/mod.ts";
import { extendDigest } from "../../chat/mod.ts";
import type { Generation } from "../../engine/mod.ts";
import { blobChunks, encodeTurnTokens } from "../../kv/mod.ts";
import type { ChainRoute } from "../routed_turn.ts";
import { turnMessageChunks } from "../turn_store.ts";
import type { SettledOutput } from "./settle_output.ts";
import type { SettledRoutes } from "./settle_routes.ts";

/** Everything a turn's record is built from. */
export interface RecordFacts {
  /** The turn's engine request id. */
  readonly rid: string;
  readonly route: ChainRoute;
  readonly generation: Generation;
  readonly settled: SettledOutput;
  /** Its routed experts (`ROUTED_EXPERTS`); `null` without. */
  readonly routes: SettledRoutes | null;
  /** What the request asked with: its model, the tools it offered, its messages' count. */
  readonly request: {
    readonly model: string;
    readonly toolNames: readonly string[];
    readonly messageCount: number;
  };
  /** The message identity of the reply the agent was given (the next request echoes it). */
  readonly replyIdentity: string;
  /** The time the turn is recorded at (epoch ms). */
  readonly now: number;
  /** Time spent routing and rendering, and in all, in ms. */
  readonly timings: { readonly renderMs: number; readonly totalMs: number };
}

/** A turn as it is committed: its record, the chain's next head, and its blobs' chunks. */
export interface TurnCommitRecord {
  readonly turn: TurnRecord;
  readonly header: ChainHeader;
  /** The turn's tokens (`encodeTurnTokens`). */
  readonly chunks: Uint8Array[];
  /** The request's messages, when the session keeps them (`record_messages`). */
  readonly messageChunks: Uint8Array[] | null;
  /** Its routed experts (`ROUTED_EXPERTS`). */
  readonly routeChunks: Uint8Array[] | null;
}

/**
 * The turn's record, head and chunks.
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { PromptIds } from "../../engine/mod.ts";
 * import { buildTurnRecord } from "./build_record.ts";
 * const { turn, header } = buildTurnRecord({
 *   rid: "r1",
 *   route: {
 *     kind: "start", sessionId: "s", chainId: "c0", requestDigest: "d", bodyDigest: "b",
 *     chain: { key: ["chain", "s", "c0"], value: null, versionstamp: null },
 *     base: { turnCount: 0, lastRid: null, reasoning: false },
 *     prompt: {
 *       ids: PromptIds.from([1, 2]), delta: [1, 2], images: [], newImages: [],
 *       imageData: new Map(), startsInReasoning: false, messages: { messages: [] },
 *       routes: { recorded: 0, spans: [] },
 *     },
 *     tools: [], recordMessages: false,
 *   },
 *   generation: {
 *     rid: "r1", outputIds: [3], logprobs: [-0.5], finish: { type: "stop", matched: 3 },
 *     weightVersions: ["v1"], versionSpans: [{ version: "v1", start: 0, end: 1 }], aborts: 0,
 *     engineMs: 5, engineReportedMs: 4,
 *   },
 *   routes: null,
 *   settled: {
 *     output: [3], end: { reason: "end_of_turn", stopSequence: null }, closing: [], flags: [],
 *     masked: false, blocks: [], reasoning: false,
 *   },
 *   request: { model: "m", toolNames: [], messageCount: 1 },
 *   replyIdentity: "a",
 *   now: 0,
 *   timings: { renderMs: 1, totalMs: 7 },
 * });
 * assert.equal(turn.inputLen, 2);
 * assert.equal(header.tokenCount, 3);
 * ```
 */
export function buildTurnRecord(facts: RecordFacts): TurnCommitRecord {
  const { route, generation, settled, request } = facts;
  const { output, closing } = settled;
  const messageCount = request.messageCount + 1;
  const digest = extendDigest(route.requestDigest, facts.replyIdentity);
  const inputLen = route.prompt.ids.length;
  const chunks = encodeTurnTokens({
    delta: route.prompt.delta,
    output,
    logprobs: generation.logprobs,
    closing,
  });
  const messageChunks = route.recordMessages ? turnMessageChunks(route.prompt.messages) : null;
  const routeChunks = facts.routes ? blobChunks(facts.routes.bytes) : null;
  const turn: TurnRecord = {
    index: route.base.turnCount,
    rid: facts.rid,
    parent: route.base.lastRid,
    inputLen,
    deltaLen: route.prompt.delta.length,
    outputLen: output.length,
    closingLen: closing.length,
    finishReason: settled.end.reason,
    stopSequence: settled.end.stopSequence,
    flags: settled.flags,
    route: route.kind,
    toolCalls: settled.blocks.filter((block) => block.type === "tool_call").length,
    masked: settled.masked,
    weightVersions: generation.weightVersions,
    versionSpans: generation.versionSpans,
    aborts: generation.aborts,
    ...(generation.cachedTokens === undefined ? {} : { cachedTokens: generation.cachedTokens }),
    ...(generation.worker === undefined ? {} : { worker: generation.worker }),
    ...(route.prompt.newImages.length > 0 ? { images: route.prompt.newImages } : {}),
    ...(facts.routes && routeChunks
      ? { routes: { ...facts.routes.routes, chunks: routeChunks.length } }
      : {}),
    startsInReasoning: route.prompt.startsInReasoning,
    reasoning: settled.reasoning,
    toolNames: request.toolNames,
    model: request.model,
    messageCount,
    digest,
    requestDigest: route.requestDigest,
    bodyDigest: route.bodyDigest,
    chunks: chunks.length,
    ...(messageChunks ? { messageChunks: messageChunks.length } : {}),
    createdAt: facts.now,
    timings: {
      renderMs: facts.timings.renderMs,
      engineMs: generation.engineMs,
      engineReportedMs: generation.engineReportedMs,
      totalMs: facts.timings.totalMs,
    },
  };
  const header: ChainHeader = {
    ...route.chain.value!,
    tools: route.tools,
    reasoning: route.base.reasoning || settled.reasoning,
    turnCount: turn.index + 1,
    tokenCount: inputLen + output.length + closing.length,
    messageCount,
    digest,
    lastRid: turn.rid,
    updatedAt: facts.now,
  };
  return { turn, header, chunks, messageChunks, routeChunks };
}
