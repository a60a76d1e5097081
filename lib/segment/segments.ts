/**
 * A session's segments: one per chain that recorded turns, in the order the chains started, each
 * flattened to training arrays with its kind, lineage and facts. Discarded turns (rewound away)
 * never reach a segment.
 *
 * @module
 */
import {
  type ChainArrays,
  type ChainHeader,
  flattenChain,
  type SegmentKind,
  segmentKind,
  type TurnRecord,
} from "../chain/mod.ts";
import {
  listChains,
  liveSession,
  readLiveTurns,
  readReward,
  readTurnTokens,
  type RewardedSession,
} from "../session/mod.ts";
import type { Store } from "../kv/mod.ts";

/** Where a segment comes from. */
export interface Lineage {
  /** The chain that dispatched this sub-agent, or the conversation this one replaced. */
  readonly parent: string | null;
  /** The id of the Agent/Task tool call that dispatched this sub-agent. */
  readonly dispatch: string | null;
  /** The client's id for the sub-agent. */
  readonly agent_id: string | null;
}

/** Facts a trainer filters or weighs segments by. */
export interface SegmentStats {
  readonly turns: number;
  /** How the last turn ended. */
  readonly finish_reason: string | null;
  /** Engine-side aborts resumed (weight updates). */
  readonly aborts: number;
  /** Turns whose sampled tokens carry mask 0 by policy. */
  readonly masked_turns: number;
  /** Turns with a tool call that could not be parsed. */
  readonly ill_formed_turns: number;
  /** Turns whose reply called at least one tool. */
  readonly tool_turns: number;
  /** Weight versions that sampled the segment, in order of first use. */
  readonly weight_versions: readonly string[];
}

/** One chain as a training segment. */
export interface Segment {
  /** Position among the session's segments, chronological. */
  readonly index: number;
  readonly kind: SegmentKind;
  readonly header: ChainHeader;
  readonly turns: readonly TurnRecord[];
  readonly arrays: ChainArrays;
  readonly lineage: Lineage;
  readonly stats: SegmentStats;
}

/** A session and its segments. */
export interface SessionSegments {
  readonly session: RewardedSession;
  readonly segments: readonly Segment[];
}

/**
 * Reads every segment of a session.
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { buildDeps } from "../../functions/_deps.ts";
 * import { anthropicTurnInput } from "../anthropic/mod.ts";
 * import { resolveConfig } from "../config/mod.ts";
 * import { openSession, startTurn } from "../session/mod.ts";
 * import { readSessionSegments } from "./segments.ts";
 * // A session of one turn, answered by the built-in scripted engine.
 * const deps = await buildDeps(resolveConfig({ KV_PATH: ":memory:" }));
 * const { session: { id } } = await openSession(deps.kv);
 * const messages = [{ role: "user" as const, content: "hi" }];
 * const context = { sessionId: id, signingSecret: "secret" };
 * const input = anthropicTurnInput({ model: "m", max_tokens: 64, messages }, context);
 * await (await startTurn(deps, input)).completion;
 * const { segments } = await readSessionSegments(deps.kv, id);
 * assert.deepEqual(segments.map((s) => s.kind), ["final"]);
 * await deps.close();
 * ```
 * @throws {SessionNotFoundError}
 */
export async function readSessionSegments(
  kv: Store,
  sessionId: string,
): Promise<SessionSegments> {
  const record = (await liveSession(kv, sessionId)).value;
  const session = { ...record, reward: await readReward(kv, sessionId) };
  const segments: Segment[] = [];
  for (const header of await listChains(kv, sessionId)) {
    const chainId = header.id;
    if (header.turnCount === 0) continue;
    const turns = await readLiveTurns(kv, header);
    const withTokens = [];
    for (const record of turns) {
      withTokens.push({ record, tokens: await readTurnTokens(kv, sessionId, chainId, record) });
    }
    segments.push({
      index: segments.length,
      kind: segmentKind(header),
      header,
      turns,
      arrays: flattenChain(withTokens),
      lineage: { parent: header.parent, dispatch: header.dispatch, agent_id: header.agentId },
      stats: statsOf(turns),
    });
  }
  return { session, segments };
}

function statsOf(turns: readonly TurnRecord[]): SegmentStats {
  const count = (test: (turn: TurnRecord) => boolean) => turns.filter(test).length;
  return {
    turns: turns.length,
    finish_reason: turns.at(-1)?.finishReason ?? null,
    aborts: turns.reduce((sum, turn) => sum + turn.aborts, 0),
    masked_turns: count((turn) => turn.masked),
    ill_formed_turns: count((turn) => turn.flags.includes("ill_formed")),
    tool_turns: count((turn) => turn.toolCalls > 0),
    weight_versions: [...new Set(turns.flatMap((turn) => turn.weightVersions))],
  };
}
