/**
 * Routing a request to its chain (docs/DESIGN.md §4), through one door: {@linkcode route} reads
 * what its mode says (`route_snapshot.ts`), plans (`route_plan.ts`, reading more while the plan
 * asks), carries the plan out (`route_act.ts`: the prompt built by `turn_prompt.ts`, the plan's
 * one write) and checks the prompt fits.
 *
 * @module
 */
import type { ChainHeader } from "../chain/mod.ts";
import { type ActContext, extendChain, fits, startChain } from "./route_act.ts";
import { liveEntry } from "./lifecycle.ts";
import type { SessionRecord } from "./records.ts";
import { planRoute } from "./route_plan.ts";
import type { RouteChain, RouteRequest } from "./route_types.ts";
import { firstSnapshot, readNeed, readRouteSnapshot, type ReadSnapshot } from "./route_snapshot.ts";
import type { ChainRoute, RouteDeps, RoutedTurn, RouteLimits } from "./routed_turn.ts";
import { getChain } from "./session_store.ts";
import type { TurnInput } from "./turn_input.ts";

/** Attempts at a plan while other requests change the session under it. */
const ROUTE_TRIES = 8;

/**
 * Where a route is read from and what it may do.
 *
 * - `leased`: under the session's lease. Reads what the plan needs and makes the plan's one
 *   write (a new chain registered, or a replaced one reopened); a lost race plans again.
 * - `dry`: the same reads, no write: a request that only counts (a probe, `count_tokens`).
 * - `cached_head` and `read_head`: the common turn without the session's lease — the main
 *   agent extending its chain, routed on `session` (the entry the caller just read) and the
 *   chain's head: the one this process cached (`cachedHead`), unread, or one read from KV
 *   (`head`, when the caller read it; else read now). Such a route writes nothing, and is
 *   `null` when the plan needs more than those two entries (or the main chain has no head).
 */
export type RouteMode =
  | FullRouteMode
  | {
    readonly on: "cached_head";
    readonly session: Deno.KvEntry<SessionRecord>;
    /** The head this process cached (`cachedHead`). */
    readonly head: RouteChain;
  }
  | {
    readonly on: "read_head";
    readonly session: Deno.KvEntry<SessionRecord>;
    /** The head as the caller read it; absent: read now. */
    readonly head?: Deno.KvEntryMaybe<ChainHeader>;
  };

/** A route that reads what its plan needs: under the session's lease, or a dry one. */
export type FullRouteMode = { readonly on: "leased" } | { readonly on: "dry" };

/**
 * The planner's view of a turn's request.
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { anthropicTurnInput } from "../anthropic/mod.ts";
 * import { routeRequest } from "./route.ts";
 * const input = anthropicTurnInput(
 *   { model: "m", max_tokens: 64, messages: [{ role: "user", content: "hi" }] },
 *   { sessionId: "s", signingSecret: "secret" },
 * );
 * assert.equal(routeRequest(input).messageIdentities.length, 1);
 * ```
 */
export function routeRequest<Reply>(input: TurnInput<Reply>): RouteRequest {
  return {
    agentId: input.agent.id,
    parentAgentId: input.agent.parentId,
    startIdentity: input.startIdentity,
    messageIdentities: input.messageIdentities,
    settingsIdentity: input.settingsIdentity,
    lastQueryIndex: input.lastQueryIndex,
    model: input.model,
    toolNames: input.toolNames,
    get firstUserText() {
      return input.firstUserText();
    },
  };
}

/**
 * Routes a request and builds its prompt, as `mode` says.
 *
 * @throws {SessionNotFoundError}, {SessionClosedError}, {ContextOverflowError} (as soon as the
 * new text's tokens pass what the context can take), {LimitError}, {EncodeCancelledError} when
 * `limits.signal` aborts while the new text is encoded, and the adapter's errors from `lower`
 * and `verifyHistory`.
 */
export async function route<Reply>(
  deps: RouteDeps,
  input: TurnInput<Reply>,
  mode: FullRouteMode,
  limits: RouteLimits,
): Promise<RoutedTurn>;
export async function route<Reply>(
  deps: RouteDeps,
  input: TurnInput<Reply>,
  mode: RouteMode,
  limits: RouteLimits,
): Promise<RoutedTurn | null>;
export async function route<Reply>(
  deps: RouteDeps,
  input: TurnInput<Reply>,
  mode: RouteMode,
  limits: RouteLimits,
): Promise<RoutedTurn | null> {
  const request = routeRequest(input);
  const onHead = mode.on === "cached_head" || mode.on === "read_head";
  for (let attempt = 1;; attempt++) {
    const read = await readFor(deps, input, mode);
    if (read === null) return null;
    let { snapshot } = read;
    let plan;
    while ("need" in (plan = planRoute(snapshot, request, deps.routePolicy))) {
      if (onHead) return null;
      snapshot = await readNeed(deps, input, snapshot, plan);
    }
    if (onHead && (plan.act !== "extend" || plan.reopen)) return null;
    if (plan.act === "replay") {
      const { kind, chainId, record, requestDigest, bodyDigest } = plan;
      return { kind, sessionId: input.sessionId, chainId, record, requestDigest, bodyDigest };
    }
    const context: ActContext<Reply> = {
      deps,
      input,
      request,
      snapshot,
      sessionVersionstamp: read.sessionVersionstamp,
      write: mode.on === "leased",
      limits,
    };
    const routed: ChainRoute | null = plan.act === "extend"
      ? await extendChain(context, plan)
      : await startChain(context, plan);
    if (routed !== null) return fits(routed, limits.contextLength);
    if (onHead) return null;
    if (attempt >= ROUTE_TRIES) {
      throw new Error(`Cannot route a turn in session "${input.sessionId}": it keeps changing`);
    }
  }
}

/**
 * The snapshot a route starts from: the session, the request's own chain and the conversation
 * cached for it, as `mode` says they are read; `null` when a head mode has no head to route on.
 */
async function readFor<Reply>(
  deps: RouteDeps,
  input: TurnInput<Reply>,
  mode: RouteMode,
): Promise<ReadSnapshot | null> {
  if (mode.on === "leased" || mode.on === "dry") return await readRouteSnapshot(deps, input);
  const session = liveEntry(mode.session);
  const chainId = session.value.mainChain;
  if (input.agent.id !== null || chainId === null) return null;
  let own: RouteChain | null = null;
  if (mode.on === "cached_head") own = mode.head;
  else {
    const head = mode.head ?? await getChain(deps.kv, input.sessionId, chainId);
    if (head.value) own = { header: head.value, versionstamp: head.versionstamp! };
  }
  return own === null ? null : firstSnapshot(deps, session, own);
}
