/**
 * The routing policy as a pure function (docs/DESIGN.md §4): given what KV holds about a session
 * and what a request says, which chain the request continues and how, or which chain it starts.
 * It reads nothing and writes nothing; when it needs more of the session than the snapshot holds
 * it says so, and the reader ({@linkcode readRouteSnapshot}) fetches that and asks again, so the
 * common case (the request extends its own chain) reads one chain header and nothing else.
 *
 * @module
 */
import { type ChainHeader, type ChainRole, classify, findRewind } from "../chain/mod.ts";
import { extendDigest, prefixDigests } from "../chat/mod.ts";
import { SessionClosedError } from "./errors.ts";
import type { SessionRecord } from "./records.ts";
import type {
  CachedConversation,
  ExtendPlan,
  RegisterPlan,
  RouteChain,
  RouteNeed,
  RoutePlan,
  RoutePolicy,
  RouteRequest,
  RouteSnapshot,
} from "./route_types.ts";

/**
 * The empty header a registration writes: the chain's place and lineage from the plan, its
 * agent, model and tools from the request.
 */
export function newChainHeader(
  sessionId: string,
  plan: RegisterPlan,
  request: RouteRequest,
  now: number,
): ChainHeader {
  return {
    sessionId,
    id: plan.chainId,
    role: plan.role,
    wipedAt: null,
    parent: plan.parent,
    dispatch: plan.dispatch,
    agentId: request.agentId,
    model: request.model,
    tools: request.toolNames,
    reasoning: false,
    startDigest: plan.startDigest,
    turnCount: 0,
    tokenCount: 0,
    messageCount: 0,
    digest: "",
    lastRid: null,
    createdAt: now,
    updatedAt: now,
  };
}

/** How many of a parent chain's last turns are searched for the call that dispatched a sub-agent. */
export const DISPATCH_LOOKBACK_TURNS = 32;

/**
 * Routes a request, or names what it must read first.
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { buildDeps } from "../../functions/_deps.ts";
 * import { anthropicTurnInput } from "../anthropic/mod.ts";
 * import { resolveConfig } from "../config/mod.ts";
 * import { routeRequest } from "./route.ts";
 * import { planRoute } from "./route_plan.ts";
 * import { readNeed, readRouteSnapshot } from "./route_snapshot.ts";
 * import { openSession } from "./session.ts";
 * const deps = await buildDeps(resolveConfig({ KV_PATH: ":memory:" }));
 * const { session } = await openSession(deps.kv);
 * const input = anthropicTurnInput(
 *   { model: "m", max_tokens: 64, messages: [{ role: "user", content: "hi" }] },
 *   { sessionId: session.id, signingSecret: "secret" },
 * );
 * const request = routeRequest(input);
 * let { snapshot } = await readRouteSnapshot(deps, input);
 * let step = planRoute(snapshot, request, deps.routePolicy);
 * while ("need" in step) {
 *   snapshot = await readNeed(deps, input, snapshot, step);
 *   step = planRoute(snapshot, request, deps.routePolicy);
 * }
 * assert.equal(step.kind, "start"); // the session's first chain
 * await deps.close();
 * ```
 * @throws {SessionClosedError} when the session takes no more turns.
 */
export function planRoute(
  snapshot: RouteSnapshot,
  request: RouteRequest,
  policy: RoutePolicy,
): RoutePlan | RouteNeed {
  const { session } = snapshot;
  if (session.status !== "open") throw new SessionClosedError(session.id);
  const ownId = request.agentId ? snapshot.agentChain : session.mainChain;
  const own = ownId ? snapshot.chains.get(ownId) ?? null : null;
  const ownHeader = own && own.header.turnCount > 0 && mayContinue(own.header, request)
    ? own.header
    : null;

  // 1. The common case: the request repeats the conversation this process cached, and adds to it.
  if (ownHeader && snapshot.cached && extendsConversation(request, snapshot.cached)) {
    const from = ownHeader.messageCount;
    const requestDigest = request.messageIdentities.slice(from).reduce(
      extendDigest,
      ownHeader.digest,
    );
    return splitForThinking(snapshot, request, policy, own!) ??
      extendPlan("append", own!, ownHeader.turnCount, from, request, requestDigest, null);
  }

  const digests = digestsOf(request);
  const requestDigest = digests.at(-1)!;
  const bodyDigest = bodyDigestOf(request, requestDigest);

  // 2. It extends its own chain (the conversation was not cached here).
  if (ownHeader && classify(ownHeader, digests).kind === "append") {
    return splitForThinking(snapshot, request, policy, own!) ??
      extendPlan(
        "append",
        own!,
        ownHeader.turnCount,
        ownHeader.messageCount,
        request,
        requestDigest,
        null,
      );
  }

  // 3. A retry of a request already answered, in any chain.
  if (snapshot.replay === undefined) return { need: "replay", bodyDigest };
  if (snapshot.replay) {
    return {
      act: "replay",
      kind: "replay",
      chainId: snapshot.replay.chainId,
      record: snapshot.replay.record,
      requestDigest,
      bodyDigest,
    };
  }

  // 4. Back to an earlier boundary of its own chain.
  let forked: RouteChain | null = null;
  if (ownHeader && ownHeader.startDigest === digests[0]) {
    if (!own!.turns) return { need: "turns", chains: [own!.header.id] };
    const back = rewindOn(own!, digests, request, policy, null);
    if (back === "too_far") forked = own;
    else if (back) return back;
  }
  if (own && own.header.turnCount === 0 && mayContinue(own.header, request)) {
    // Registered by an earlier attempt whose turn was never recorded: start it now.
    return extendPlan("start", own, 0, 0, request, requestDigest, null);
  }

  // 5. It extends another chain of the same agent, live or replaced: continue that one in place.
  if (!snapshot.complete) return { need: "chains" };
  const candidates = [...snapshot.chains.values()]
    .filter((chain) =>
      chain.header.id !== ownId && chain.header.turnCount > 0 &&
      chain.header.agentId === request.agentId && mayContinue(chain.header, request)
    )
    .sort((a, b) =>
      b.header.updatedAt - a.header.updatedAt || b.header.id.localeCompare(a.header.id)
    );
  for (const chain of candidates) {
    if (classify(chain.header, digests).kind !== "append") continue;
    const reopen = reopening(snapshot, chain.header);
    return splitForThinking(snapshot, request, policy, chain) ??
      extendPlan(
        reopen ? "resume" : "append",
        chain,
        chain.header.turnCount,
        chain.header.messageCount,
        request,
        requestDigest,
        reopen,
      );
  }
  const sameStart = candidates.filter((chain) => chain.header.startDigest === digests[0]);
  const unread = sameStart.filter((chain) => !chain.turns).map((chain) => chain.header.id);
  if (unread.length > 0) return { need: "turns", chains: unread };
  for (const chain of sameStart) {
    const back = rewindOn(chain, digests, request, policy, reopening(snapshot, chain.header));
    if (back && back !== "too_far") return back;
  }

  // 6. A new chain.
  return newChain(snapshot, request, digests, forked);
}

/** The request's prefix digests, computed once per request. */
const digestMemo = new WeakMap<RouteRequest, string[]>();
function digestsOf(request: RouteRequest): string[] {
  let digests = digestMemo.get(request);
  if (!digests) {
    digests = prefixDigests(request.startIdentity, request.messageIdentities);
    digestMemo.set(request, digests);
  }
  return digests;
}

/**
 * The digest a retry of this request repeats: the conversation, every setting but `stream`, and
 * the agent it comes from — two sub-agents asking the same question are two requests.
 */
export function bodyDigestOf(request: RouteRequest, requestDigest: string): string {
  const body = extendDigest(requestDigest, request.settingsIdentity);
  return request.agentId ? extendDigest(body, `agent:${request.agentId}`) : body;
}

function extendPlan(
  kind: ExtendPlan["kind"],
  chain: RouteChain,
  keep: number,
  from: number,
  request: RouteRequest,
  requestDigest: string,
  reopen: ExtendPlan["reopen"],
): ExtendPlan {
  return {
    act: "extend",
    kind,
    chainId: chain.header.id,
    keep,
    from,
    reopen,
    requestDigest,
    bodyDigest: bodyDigestOf(request, requestDigest),
  };
}

/** True when the request repeats `known` exactly (same strings) and adds messages to it. */
function extendsConversation(request: RouteRequest, known: CachedConversation): boolean {
  const ids = request.messageIdentities;
  if (request.startIdentity !== known.start || ids.length <= known.messages.length) return false;
  for (let i = 0; i < known.messages.length; i++) if (ids[i] !== known.messages[i]) return false;
  return true;
}

/**
 * A replaced chain that a request continues: it becomes current again, and the chain holding its
 * place (the session's main chain, or its agent's current chain) is wiped. `null` for a chain
 * that was never replaced (only main chains and chains of a named agent are).
 */
function reopening(
  snapshot: RouteSnapshot,
  header: ChainHeader,
): ExtendPlan["reopen"] {
  if (header.wipedAt === null) return null;
  const holder = header.role === "main" ? snapshot.session.mainChain : snapshot.agentChain;
  return { retire: holder !== null && holder !== header.id ? holder : null };
}

/**
 * A rewind (or realign) on `chain`, when the request goes back to one of its turn boundaries;
 * `too_far` when it is a realign that would drop more sampled tokens than the policy allows.
 */
function rewindOn(
  chain: RouteChain,
  digests: readonly string[],
  request: RouteRequest,
  policy: RoutePolicy,
  reopen: ExtendPlan["reopen"],
): ExtendPlan | "too_far" | null {
  const turns = chain.turns!;
  const back = findRewind(turns, digests);
  if (!back) return null;
  if (back.edited) {
    const dropped = turns.slice(back.keep).reduce((sum, turn) => sum + turn.outputLen, 0);
    if (dropped > policy.realignMaxTokens) return "too_far";
  }
  const requestDigest = digests.at(-1)!;
  return extendPlan(
    back.edited ? "realign" : "rewind",
    chain,
    back.keep,
    back.from,
    request,
    requestDigest,
    reopen,
  );
}

/**
 * Under `thinkingHistory: "template"`, a request that brings a new user query to a chain holding
 * reasoning closes that chain: a new one of the same agent starts from the template's rendering.
 */
function splitForThinking(
  snapshot: RouteSnapshot,
  request: RouteRequest,
  policy: RoutePolicy,
  chain: RouteChain,
): RoutePlan | RouteNeed | null {
  const header = chain.header;
  if (policy.thinkingHistory !== "template" || !header.reasoning) return null;
  if (request.lastQueryIndex < header.messageCount) return null;
  if (!snapshot.complete) return { need: "chains" };
  return newChain(snapshot, request, digestsOf(request), chain);
}

/**
 * The chain a request that extends none starts. `forked` is the chain it replaces when it came
 * from that chain's conversation (an edited echo past the realign bound, a thinking split).
 */
function newChain(
  snapshot: RouteSnapshot,
  request: RouteRequest,
  digests: readonly string[],
  forked: RouteChain | null,
): RoutePlan | RouteNeed {
  if (!snapshot.complete) return { need: "chains" };
  const { session } = snapshot;
  const headers = [...snapshot.chains.values()].map((chain) => chain.header);
  const main = headers.find((header) => header.id === session.mainChain) ?? null;
  const claimed = new Set(headers.flatMap((header) => header.dispatch ? [header.dispatch] : []));
  const requestDigest = digests.at(-1)!;
  const plan = (
    kind: RegisterPlan["kind"],
    role: ChainRole,
    parent: string | null,
    dispatch: string | null,
    replaces: string | null,
    retireAs: RegisterPlan["retireAs"] = "wiped",
  ): RegisterPlan => {
    const becomesMain = role === "main";
    const taken = new Set(headers.map((header) => header.id));
    const chainId = becomesMain && !taken.has(session.mainChain) && !replaces
      ? session.mainChain
      : newChainId(session, taken);
    return {
      act: "register",
      kind,
      chainId,
      role,
      parent,
      dispatch,
      replaces,
      retireAs,
      becomesMain,
      startDigest: digests[0],
      requestDigest,
      bodyDigest: bodyDigestOf(request, requestDigest),
    };
  };

  if (forked) {
    const old = forked.header;
    // Only the main chain and a named agent's chain have a place to take over; others stay.
    const replaces = old.role === "main" || old.agentId !== null ? old.id : null;
    const kind = old.role === "main" ? "wipe" : old.role;
    return plan(kind, old.role, old.role === "main" ? old.id : old.parent, old.dispatch, replaces);
  }
  if (request.agentId) {
    const replaced = snapshot.agentChain ? snapshot.chains.get(snapshot.agentChain) : undefined;
    if (replaced) {
      const old = replaced.header;
      return plan("subagent", "subagent", old.parent, old.dispatch, old.id);
    }
    const parentId = snapshot.parentChain ?? main?.id ?? null;
    const dispatch = parentId ? dispatchOf(snapshot, request, parentId, claimed) : null;
    if (dispatch !== null && typeof dispatch === "object") return dispatch;
    return plan("subagent", "subagent", parentId, dispatch, null);
  }
  if (!main || main.turnCount === 0) return plan("start", "main", null, null, null);
  const sameStart = digests[0] === main.startDigest;
  if (!sameStart) {
    const dispatch = dispatchOf(snapshot, request, main.id, claimed);
    if (dispatch !== null && typeof dispatch === "object") return dispatch;
    if (dispatch) return plan("subagent", "subagent", main.id, dispatch, null);
  }
  const offers = request.toolNames.length > 0;
  const mainOffers = main.tools.length > 0;
  // Another model's request, or one with no tools where the agent has some: a helper.
  if (request.model !== main.model || (!offers && mainOffers)) {
    return plan("side", "side", main.id, null, null);
  }
  if (sameStart || (offers && sameTools(request.toolNames, main.tools))) {
    // The agent's own new conversation (a compaction, an edit, a system prompt it changed).
    return plan("wipe", "main", main.id, null, main.id);
  }
  // Another system prompt and other tools: a helper with its own question (a memory extractor,
  // a summarizer, a title), never the agent's own conversation. The one exception: a main chain
  // that offers no tools was a helper that came first, and yields to the first that does.
  if (offers && !mainOffers) return plan("start", "main", null, null, main.id, "side");
  return plan("side", "side", main.id, null, null);
}

/**
 * Whether a request may continue a chain: a request that offers no tools is never the
 * continuation of a chain that offered some (it is a helper asking its own question over the
 * agent's history, as forked queries and compaction summaries do).
 */
function mayContinue(header: ChainHeader, request: RouteRequest): boolean {
  return request.toolNames.length > 0 || header.tools.length === 0;
}

/** Whether two lists name the same tools, in any order. */
function sameTools(a: readonly string[], b: readonly string[]): boolean {
  if (a.length !== b.length) return false;
  const names = new Set(a);
  return names.size === new Set(b).size && b.every((name) => names.has(name));
}

/**
 * The dispatching call on `parentId` that started the sub-agent making this request: the latest
 * one, not claimed by another chain, whose task is in the request's opening user messages. A need
 * when the parent's calls are not read yet.
 */
function dispatchOf(
  snapshot: RouteSnapshot,
  request: RouteRequest,
  parentId: string,
  claimed: ReadonlySet<string>,
): string | null | RouteNeed {
  const task = request.firstUserText;
  const parent = snapshot.chains.get(parentId);
  if (!task || !parent || parent.header.turnCount === 0) return null;
  const calls = snapshot.dispatches.get(parentId);
  if (!calls) return { need: "dispatch", chain: parentId };
  for (const call of calls) {
    const asked = call.task.trim();
    if (asked !== "" && task.includes(asked) && !claimed.has(call.id)) return call.id;
  }
  return null;
}

/** The first free chain id (`c0`, `c1`…), keeping the main chain's reserved id. */
function newChainId(session: SessionRecord, taken: ReadonlySet<string>): string {
  for (let n = session.chainCount;; n++) {
    const id = `c${n}`;
    if (!taken.has(id) && id !== session.mainChain) return id;
  }
}
