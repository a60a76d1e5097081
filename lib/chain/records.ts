/**
 * The stored shapes of a chain: its header and its turns' records, and what a chain is as a
 * training segment. The chain and session layers build and read them; `lib/session`'s
 * `session_store.ts` and `turn_store.ts` keep them in KV.
 *
 * @module
 */

import type { ChatMessage, ChatTool } from "../chat/mod.ts";
import type { VersionSpan } from "../engine/mod.ts";

/**
 * What a turn's request added to its chain, as the canonical messages the template rendered into
 * its delta: the whole conversation and its tools on a chain's first turn, the new messages
 * (and a note on the tools added or withdrawn since the turn before) after. A chain's turns' messages, each
 * followed by its reply, make up the conversation.
 */
export interface TurnMessages {
  readonly messages: readonly ChatMessage[];
  /** The tools offered, on a chain's first turn. */
  readonly tools?: readonly ChatTool[];
}

/** What a chain is in its session: the main conversation, a sub-agent's, or a side request's. */
export type ChainRole = "main" | "subagent" | "side";

/**
 * A chain as a training segment: `final` the current main conversation, `wipe` a conversation a
 * later one replaced (a compaction restarts it from a summary), `subagent`, and `side` (requests
 * of no agent: titles, summaries, a small model's work).
 */
export type SegmentKind = "final" | "wipe" | "subagent" | "side";

/**
 * A chain's header: enough to route to it and extend it without reading its tokens. A chain is
 * registered with an empty header when a request first routes to it.
 */
export interface ChainHeader {
  readonly sessionId: string;
  readonly id: string;
  readonly role: ChainRole;
  /** When a later conversation of the same agent replaced this one; `null` while current. */
  readonly wipedAt: number | null;
  /** Lineage: the chain that dispatched this sub-agent, or the conversation this one replaced. */
  readonly parent: string | null;
  /** The id of the Agent/Task tool call that dispatched this sub-agent, when it was found. */
  readonly dispatch: string | null;
  /** The client's id for this sub-agent (`x-claude-code-agent-id`), if it sent one. */
  readonly agentId: string | null;
  /** The model name of the request that started the chain. */
  readonly model: string;
  /**
   * Names of the tools the model was last told are offered: its first request's, then each
   * turn's (a delta that changes them tells the model which tools came and which went).
   */
  readonly tools: readonly string[];
  /** Some live turn's output holds reasoning (which templates drop at a new user query). */
  readonly reasoning: boolean;
  /** Digest of the chain's start (its system prompt): `prefixDigests(start, [])[0]`. */
  readonly startDigest: string;
  readonly turnCount: number;
  /** Tokens in the chain: every turn's delta, output and closing tokens. */
  readonly tokenCount: number;
  /** Messages of the conversation so far, the last reply included. */
  readonly messageCount: number;
  /** Prefix digest of those messages (see `prefixDigests`); empty before the first turn. */
  readonly digest: string;
  /** The engine request id of the chain's last live turn; turns link back to their parents. */
  readonly lastRid: string | null;
  readonly createdAt: number;
  readonly updatedAt: number;
}

/**
 * The name a chain goes by outside its session (its engine placement and engine session): chain
 * ids are the session's own (`c0`, `c1`…).
 */
export function chainRef(sessionId: string, chainId: string): string {
  return `${sessionId}:${chainId}`;
}

/**
 * The segment kind of a chain.
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { segmentKind } from "./records.ts";
 * assert.equal(segmentKind({ role: "main", wipedAt: null }), "final");
 * assert.equal(segmentKind({ role: "main", wipedAt: 1_700_000_000_000 }), "wipe");
 * assert.equal(segmentKind({ role: "side", wipedAt: null }), "side");
 * ```
 */
export function segmentKind(header: Pick<ChainHeader, "role" | "wipedAt">): SegmentKind {
  if (header.role === "main") return header.wipedAt === null ? "final" : "wipe";
  return header.role;
}

/** How a turn's generation ended. */
export type FinishReason = "end_of_turn" | "length" | "stop_sequence";

/**
 * One request → response of a chain, without its tokens (those are in the turn's chunks). The
 * live turns of a chain are the ones reached from the header's `lastRid` through `parent`; a
 * rewind leaves the turns it discards in KV, off that path.
 */
/**
 * An image in a chain's prompt: its identity (the SHA-256 of its bytes), format and size, and
 * where its pad tokens are in the chain's tokens. Its bytes are not in the record.
 */
export interface TurnImage {
  readonly digest: string;
  readonly mediaType: string;
  readonly width: number;
  readonly height: number;
  readonly bytes: number;
  /** Position of its first pad token in the chain's tokens. */
  readonly start: number;
  /** Its pad tokens: how many tokens the model's processor gives it. */
  readonly length: number;
}

/**
 * The routed experts a turn recorded (R3; docs/DESIGN.md §7, "Routed experts"): its own rows,
 * positions `start .. start + rows` of the chain — what the chain had not recorded before it, up
 * to its output's last token but one — kept in a blob of their own (`turn_routes` chunks), in
 * the smallest type that holds the model's expert ids.
 */
export interface TurnRoutes {
  /** The first position of its own rows: what the chain's earlier turns had recorded. */
  readonly start: number;
  readonly rows: number;
  /** Values a row: the model's layers × experts per token. */
  readonly width: number;
  readonly dtype: "uint8" | "uint16" | "int32";
  /** SHA-256 (hex) of its own rows' bytes. */
  readonly digest: string;
  /** Chunks of the blob. */
  readonly chunks: number;
  /**
   * Rows the engine reported again for positions the chain had recorded (a recompute: a
   * failover, a resend outside an engine session, a rewind) that differ from the record. Those
   * rows, from `recomputedFrom` to `start`, follow the own rows in the blob; the record keeps the
   * rows first recorded. Absent: nothing reported again differed.
   */
  readonly mismatched?: number;
  readonly recomputedFrom?: number;
  /**
   * What the engine reported, when it reported rows for recorded positions too: from where, and
   * the SHA-256 (hex) of every row it sent. The next turn's report of the same positions, when
   * equal, is the engine's view unchanged (its cache), not a new recompute.
   */
  readonly reported?: { readonly start: number; readonly digest: string };
}

/** A live turn's own rows of routed experts, as a chain's later turns check theirs against. */
export type RouteSpan =
  & { readonly index: number; readonly rid: string }
  & Pick<TurnRoutes, "start" | "rows" | "width" | "dtype" | "digest" | "chunks">;

export interface TurnRecord {
  readonly index: number;
  /** Engine request id; response and tool-use ids derive from it. */
  readonly rid: string;
  /** The previous live turn's rid when this turn was recorded; `null` for the chain's first. */
  readonly parent: string | null;
  /** Tokens before this turn's output: the whole prompt the engine read. */
  readonly inputLen: number;
  /** Tokens this turn added before its output (the whole prompt on a chain's first turn). */
  readonly deltaLen: number;
  /** Tokens the engine sampled. */
  readonly outputLen: number;
  /** Tokens appended after the output to close the turn (the end-of-turn token), mask 0. */
  readonly closingLen: number;
  readonly finishReason: FinishReason;
  readonly stopSequence: string | null;
  /**
   * `ill_formed`, `roundtrip_mismatch`, `masked`, `engine_aborted`, `engine_failover`,
   * `session_resent`, `stream_diverged`.
   */
  readonly flags: readonly string[];
  /**
   * How its request was routed (the session layer's `RouteKind`: `start`, `append`, `rewind`,
   * `realign`, `resume`, `wipe`, `subagent`, …); absent on turns recorded before it was kept.
   */
  readonly route?: string;
  /** Tool calls the reply carried. */
  readonly toolCalls: number;
  /** The sampled tokens of this turn carry mask 0 (masking policy). */
  readonly masked: boolean;
  /** The weight versions that sampled the output, in order of first use. */
  readonly weightVersions: readonly string[];
  /**
   * The weight version of each output token, run-length over output positions (a turn resumed
   * across a weight update has two or more). Absent on turns recorded before versions were kept
   * per token: read it through {@linkcode outputVersionSpans}.
   */
  readonly versionSpans?: readonly VersionSpan[];
  /** Engine-side aborts resumed during this turn. */
  readonly aborts: number;
  /**
   * Prompt tokens the engine reported served from its prefix cache (its first call's); absent when
   * it reported none.
   */
  readonly cachedTokens?: number;
  /**
   * The engine worker that sampled it (`ENGINE_PLACEMENT=gateway`: a URL of `ENGINE_WORKERS`; the
   * last one, when a worker died under the turn).
   */
  readonly worker?: string;
  /** The images this turn's delta added, in prompt order; absent when it added none. */
  readonly images?: readonly TurnImage[];
  /** The routed experts it recorded (`ROUTED_EXPERTS`); absent without them. */
  readonly routes?: TurnRoutes;
  /** The prompt ended inside `<think>`, so the output began as reasoning. */
  readonly startsInReasoning: boolean;
  /** The output holds reasoning. */
  readonly reasoning: boolean;
  /** Tools the request offered, needed to parse the output again. */
  readonly toolNames: readonly string[];
  readonly model: string;
  /** Messages of the conversation after this turn, its reply included. */
  readonly messageCount: number;
  /** Prefix digest of those messages. */
  readonly digest: string;
  /** Prefix digest of the request's messages (the conversation before the reply). */
  readonly requestDigest: string;
  /** Digest of the whole normalized request body: a retry repeats it. */
  readonly bodyDigest: string;
  /** Chunks holding the turn's token blob. */
  readonly chunks: number;
  /**
   * Chunks holding the turn's request messages ({@linkcode TurnMessages}), kept when its session
   * records them; absent (or 0) when it does not.
   */
  readonly messageChunks?: number;
  readonly createdAt: number;
  /**
   * Milliseconds: routing and rendering, the engine call as the gateway saw it, the engine's own
   * account of it (`e2e_latency`), and the whole turn up to its commit.
   */
  readonly timings: {
    readonly renderMs: number;
    readonly engineMs: number;
    readonly engineReportedMs: number;
    readonly totalMs: number;
  };
}

/**
 * The loss mask of a turn's sampled tokens: 1, or 0 when a policy masked the turn. Its delta and
 * closing tokens are 0 always.
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { outputMask } from "./records.ts";
 * assert.equal(outputMask({ masked: false }), 1);
 * assert.equal(outputMask({ masked: true }), 0);
 * ```
 */
export function outputMask(turn: Pick<TurnRecord, "masked">): 0 | 1 {
  return turn.masked ? 0 : 1;
}

/**
 * The weight version of each of a turn's output tokens, run-length. A turn recorded before
 * versions were kept per token is one span of its last version.
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { outputVersionSpans } from "./records.ts";
 * assert.deepEqual(outputVersionSpans({ outputLen: 3, weightVersions: ["4"] }), [
 *   { version: "4", start: 0, end: 3 },
 * ]);
 * ```
 */
export function outputVersionSpans(
  turn: Pick<TurnRecord, "outputLen" | "weightVersions" | "versionSpans">,
): readonly VersionSpan[] {
  if (turn.versionSpans) return turn.versionSpans;
  const version = turn.weightVersions.at(-1);
  return version === undefined || turn.outputLen === 0
    ? []
    : [{ version, start: 0, end: turn.outputLen }];
}
