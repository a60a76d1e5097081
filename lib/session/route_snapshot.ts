/**
 * What the route planner reads of a session, read from KV in stages: first the session, the
 * request's own chain and this process's cached conversation for it; then, only when the planner
 * asks, a replay entry, every chain header, some chains' live turns, or a parent's dispatch calls.
 *
 * @module
 */
import type { DispatchTools } from "../agents/mod.ts";
import type { ChainHeader, ChainRoutes, TurnImage } from "../chain/mod.ts";
import { type ChainCache, type Store } from "../kv/mod.ts";
import { getAgentChain, getChain, getReplay, listChainEntries } from "./session_store.ts";
import { liveTurns, readAllTurns, readTurnTokens } from "./turn_store.ts";
import type { PromptIds } from "../engine/mod.ts";
import type { ChatTokenizer } from "../tokenizer/mod.ts";
import { liveSession } from "./lifecycle.ts";
import type { SessionRecord } from "./records.ts";
import { parseTurnOutput, untypedTools } from "./output.ts";
import { DISPATCH_LOOKBACK_TURNS } from "./route_plan.ts";
import type { DispatchCall, RouteChain, RouteNeed, RouteSnapshot } from "./route_types.ts";
import type { TurnInput } from "./turn_input.ts";

/**
 * What a process remembers of a chain at one version: its tokens as the engine receives them,
 * and the identities of the conversation they render, so the next request's history is compared
 * with them instead of hashed again.
 */
export interface CachedChain {
  /** The chain's header at this version. */
  readonly header: ChainHeader;
  readonly prompt: PromptIds;
  /** The images in `prompt`, in order (absent: none). */
  readonly images?: readonly TurnImage[];
  /** The routed experts the chain recorded (absent: none). */
  readonly routes?: ChainRoutes;
  /** Identities of the start and of every message, the last reply included; `null` after a KV read. */
  readonly conversation: { readonly start: string; readonly messages: readonly string[] } | null;
}

/** The weight of a cached chain: its tokens. */
export function cachedChainTokens(chain: CachedChain): number {
  return chain.prompt.length;
}

/** Bytes V8 spends on a string besides its characters (its header, its slot in the array). */
const STRING_OVERHEAD = 24;

/**
 * The bytes a cached chain takes: its prompt's buffer (its capacity, not only the digits used),
 * and its conversation's identities (each message's canonical text, a byte a character at least:
 * summed, one length a message, beside the identity comparison a turn makes of them anyway).
 */
export function cachedChainBytes(chain: CachedChain): number {
  const conversation = chain.conversation;
  if (conversation === null) return chain.prompt.bytes;
  let chars = conversation.start.length + STRING_OVERHEAD;
  for (const identity of conversation.messages) chars += identity.length + STRING_OVERHEAD;
  return chain.prompt.bytes + chars;
}

/** The cache key of a chain. */
export function cacheKey(chain: { sessionId: string; id: string }): string {
  return `${chain.sessionId}/${chain.id}`;
}

/** What reading a snapshot needs. */
export interface SnapshotDeps {
  readonly kv: Store;
  readonly tokenizer: ChatTokenizer;
  readonly cache: ChainCache<CachedChain>;
  readonly dispatch: DispatchTools;
}

/** A snapshot and the session record's versionstamp, which a registration is checked against. */
export interface ReadSnapshot {
  readonly snapshot: RouteSnapshot;
  readonly sessionVersionstamp: string;
}

/**
 * The first stage: the session, the request's own chain, and the cached conversation for it.
 *
 * @throws {SessionNotFoundError}
 */
export async function readRouteSnapshot<Reply>(
  deps: SnapshotDeps,
  input: TurnInput<Reply>,
): Promise<ReadSnapshot> {
  const { kv } = deps;
  const [entry, agentChain, parentChain] = await Promise.all([
    liveSession(kv, input.sessionId),
    input.agent.id ? getAgentChain(kv, input.sessionId, input.agent.id) : null,
    input.agent.id && input.agent.parentId
      ? getAgentChain(kv, input.sessionId, input.agent.parentId)
      : null,
  ]);
  const ownId = input.agent.id ? agentChain : entry.value.mainChain;
  const own = ownId ? await getChain(kv, input.sessionId, ownId) : null;
  return firstSnapshot(
    deps,
    entry,
    own?.value ? { header: own.value, versionstamp: own.versionstamp! } : null,
    { agentChain, parentChain },
  );
}

/**
 * The first stage from entries the caller has: the session's, and its own chain's (`null` when
 * it has none yet).
 */
export function firstSnapshot(
  deps: Pick<SnapshotDeps, "cache">,
  session: Deno.KvEntry<SessionRecord>,
  own: RouteChain | null,
  agents: { agentChain: string | null; parentChain: string | null } = {
    agentChain: null,
    parentChain: null,
  },
): ReadSnapshot {
  const chains = new Map<string, RouteChain>();
  let cached: RouteSnapshot["cached"] = null;
  if (own) {
    chains.set(own.header.id, own);
    cached = deps.cache.get(cacheKey(own.header), own.versionstamp)?.conversation ?? null;
  }
  return {
    snapshot: {
      session: session.value,
      ...agents,
      chains,
      complete: false,
      cached,
      dispatches: new Map(),
    },
    sessionVersionstamp: session.versionstamp,
  };
}

/**
 * The head of the session's main chain as this process cached it (unread: usually what KV
 * holds), for a request of the main agent; `null` for another agent's request, or when nothing
 * is cached.
 */
export function cachedHead(
  deps: Pick<SnapshotDeps, "cache">,
  agentId: string | null,
  session: SessionRecord,
): RouteChain | null {
  if (agentId !== null || session.mainChain === null) return null;
  const cached = deps.cache.latest(cacheKey({ sessionId: session.id, id: session.mainChain }));
  return cached && { header: cached.value.header, versionstamp: cached.versionstamp };
}

/** The snapshot with what the planner asked for read. */
export async function readNeed<Reply>(
  deps: SnapshotDeps,
  input: TurnInput<Reply>,
  snapshot: RouteSnapshot,
  need: RouteNeed,
): Promise<RouteSnapshot> {
  const { kv } = deps;
  const sessionId = snapshot.session.id;
  switch (need.need) {
    case "replay":
      return { ...snapshot, replay: await findReplay(kv, sessionId, need.bodyDigest) };
    case "chains": {
      const chains = new Map(snapshot.chains);
      for (const entry of await listChainEntries(kv, sessionId)) {
        const known = chains.get(entry.value.id);
        // A chain read already keeps its entry (and turns) as read: the plan is checked against it.
        if (!known) {
          chains.set(entry.value.id, { header: entry.value, versionstamp: entry.versionstamp });
        }
      }
      return { ...snapshot, chains, complete: true };
    }
    case "turns": {
      const chains = new Map(snapshot.chains);
      await Promise.all(need.chains.map(async (id) => {
        const chain = chains.get(id)!;
        const turns = liveTurns(await readAllTurns(kv, sessionId, id), chain.header);
        chains.set(id, { ...chain, turns });
      }));
      return { ...snapshot, chains };
    }
    case "dispatch": {
      const parent = snapshot.chains.get(need.chain)!;
      const calls = await dispatchCalls(deps, input, parent.header);
      return { ...snapshot, dispatches: new Map(snapshot.dispatches).set(need.chain, calls) };
    }
  }
}

/** The live turn that answered this body before, in any chain of the session. */
async function findReplay(
  kv: Store,
  sessionId: string,
  bodyDigest: string,
): Promise<RouteSnapshot["replay"]> {
  const entry = await getReplay(kv, sessionId, bodyDigest);
  if (!entry) return null;
  const chain = await getChain(kv, sessionId, entry.chainId);
  if (!chain.value) return null;
  const live = liveTurns(await readAllTurns(kv, sessionId, entry.chainId), chain.value);
  const record = live[entry.index];
  return record?.rid === entry.rid ? { chainId: entry.chainId, record } : null;
}

/** The calls of the chain's latest turns that start a sub-agent with a task, latest first. */
async function dispatchCalls<Reply>(
  deps: SnapshotDeps,
  input: TurnInput<Reply>,
  header: ChainHeader,
): Promise<DispatchCall[]> {
  const out: DispatchCall[] = [];
  const turns = liveTurns(await readAllTurns(deps.kv, header.sessionId, header.id), header);
  for (const turn of turns.slice(-DISPATCH_LOOKBACK_TURNS).reverse()) {
    if (turn.toolCalls === 0) continue;
    const tokens = await readTurnTokens(deps.kv, header.sessionId, header.id, turn);
    const end = { reason: turn.finishReason, stopSequence: turn.stopSequence };
    const { blocks } = parseTurnOutput(
      deps.tokenizer,
      Array.from(tokens.output),
      end,
      turn.startsInReasoning,
      // A dispatch's task is text: names are enough.
      untypedTools(turn.toolNames),
    );
    const calls = blocks.filter((block) => block.type === "tool_call");
    for (let i = calls.length - 1; i >= 0; i--) {
      const call = calls[i];
      if (call.type !== "tool_call") continue;
      const task = deps.dispatch.taskOf(call.name, call.input);
      if (task !== null) out.push({ id: input.toolUseId(turn.rid, i), task });
    }
  }
  return out;
}
