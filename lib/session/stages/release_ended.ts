/**
 * The first stage of a generated turn: chains that will not continue let their engine sessions
 * and placements go — a conversation this turn's new chain wiped, and sub-agents whose reports
 * this turn's new messages carry (docs/DESIGN.md §7, "Placement and the prefix cache").
 *
 * @module
 */
import { chainRef } from "../../chain/mod.ts";
import type { Engine } from "../../engine/mod.ts";
import type { Dispatches } from "../dispatches.ts";
import type { ChainRoute } from "../routed_turn.ts";

/** What releasing reads: the engine (which may hold nothing to release) and the dispatches. */
export interface ReleaseDeps {
  readonly engine: Pick<Engine, "release">;
  readonly dispatches?: Dispatches;
}

/**
 * Tells the engine which chains ended with this turn, and remembers the dispatch of a
 * sub-agent's chain so its parent's next messages can end it.
 */
export function releaseEnded(deps: ReleaseDeps, route: ChainRoute): void {
  if (!deps.engine.release) return;
  const { sessionId } = route;
  const ended = route.retired ? [chainRef(sessionId, route.retired)] : [];
  const dispatch = route.kind === "subagent" ? route.chain.value?.dispatch : null;
  if (dispatch) deps.dispatches?.add(sessionId, dispatch, chainRef(sessionId, route.chainId));
  ended.push(...(deps.dispatches?.answered(sessionId, route.prompt.messages.messages) ?? []));
  if (ended.length > 0) deps.engine.release(ended);
}
