/**
 * Routing a request to its chain and building its prompt (DESIGN §4). A request goes to its
 * agent's chain (the client's agent id) or the main chain, where it appends, replays a turn
 * already answered, or rewinds to an earlier turn boundary. A request that extends no chain
 * starts one: a sub-agent's (dispatched by an Agent/Task call on its parent), a side chain (no
 * agent: another model, or no tools), or a new main conversation replacing the old one (`wipe`,
 * as after a compaction). Ambiguity goes to the main chain, never to an invented sub-agent.
 *
 * @module
 */
import { classify, findRewind } from "../chain/mod.ts";
import { extendDigest, prefixDigests } from "../chat/mod.ts";
import { PromptIds } from "../engine/mod.ts";
import {
  type ChainCache,
  type ChainHeader,
  type ChainRole,
  getAgentChain,
  getChain,
  getReplay,
  keys,
  listChainEntries,
  liveTurns,
  readAllTurns,
  readTurnTokens,
  registerChain,
  type SessionRecord,
  type TurnRecord,
} from "../kv/mod.ts";
import { LimitError, MAX_CHAINS_PER_SESSION, MAX_TOOLS } from "../limits/mod.ts";
import { type ChatTokenizer, opensReasoning, renderDelta, renderPrompt } from "../template/mod.ts";
import { liveSession } from "./lifecycle.ts";
import { parseTurnOutput } from "./output.ts";
import { ContextOverflowError, SessionClosedError } from "./errors.ts";
import type { TurnInput } from "./turn_input.ts";

/** Tool names that dispatch a sub-agent (Claude Code's Agent, formerly Task). */
export const DISPATCH_TOOLS: ReadonlySet<string> = new Set(["Agent", "Task"]);
/** How many of a parent chain's last turns are searched for the call that dispatched a sub-agent. */
const DISPATCH_LOOKBACK_TURNS = 32;
/** Attempts at registering a new chain while other requests change the session. */
const REGISTER_TRIES = 8;

/**
 * What a process remembers of a chain at one version: its tokens as the engine receives them,
 * and the identities of the conversation they render, so the next request's history is compared
 * with them instead of hashed again.
 */
export interface CachedChain {
  readonly prompt: PromptIds;
  /** Identities of the start and of every message, the last reply included; `null` after a KV read. */
  readonly conversation: { readonly start: string; readonly messages: readonly string[] } | null;
}

/** The weight of a cached chain: its tokens. */
export function cachedChainTokens(chain: CachedChain): number {
  return chain.prompt.length;
}

/** What routing reads. */
export interface RouteDeps {
  readonly kv: Deno.Kv;
  readonly tokenizer: ChatTokenizer;
  readonly cache: ChainCache<CachedChain>;
}

/** How a request was routed. */
export type RouteKind =
  | "append"
  | "replay"
  | "rewind"
  | "start"
  | "wipe"
  | "subagent"
  | "side";

/** The chain state a new turn builds on (the kept part of the chain after a rewind). */
export interface ChainBase {
  readonly turnCount: number;
  readonly lastRid: string | null;
}

/** A request routed to its chain. */
export interface RoutedTurn {
  readonly kind: RouteKind;
  readonly chainId: string;
  /** The chain's header as the turn found it (an empty one for a chain just registered). */
  readonly chain: Deno.KvEntryMaybe<ChainHeader>;
  readonly base: ChainBase;
  /** Prefix digest of the request's whole conversation. */
  readonly requestDigest: string;
  /** Digest of the whole normalized request: its body and the agent it comes from. */
  readonly bodyDigest: string;
  /** The recorded turn a replay answers with. */
  readonly replay: { readonly chainId: string; readonly record: TurnRecord } | null;
  /** The whole prompt: the chain's kept tokens followed by the delta (empty for a replay). */
  readonly prompt: PromptIds;
  /** Tokens this turn adds before its output (the whole prompt on a chain's first turn). */
  readonly delta: number[];
  readonly startsInReasoning: boolean;
  /** Names of the tools the chain's prompt has shown once this turn is recorded. */
  readonly tools: readonly string[];
}

/** The cache key of a chain. */
export function cacheKey(chain: { sessionId: string; id: string }): string {
  return `${chain.sessionId}/${chain.id}`;
}

/**
 * Routes a request and builds its prompt. With `register`, a new chain is registered in KV (its
 * empty header, the session's chain list, the conversation it replaces marked wiped); without
 * it nothing is written (to count tokens).
 *
 * @throws {SessionNotFoundError}, {SessionClosedError}, and the adapter's errors from `lower`
 * and `verifyHistory`.
 */
export async function routeTurn<Reply>(
  deps: RouteDeps,
  input: TurnInput<Reply>,
  options: { register: boolean; contextLength?: number },
): Promise<RoutedTurn> {
  for (let attempt = 1;; attempt++) {
    const routed = await tryRoute(deps, input, options.register, options.contextLength ?? Infinity);
    if (routed !== null) return fits(routed, options.contextLength ?? Infinity);
    if (attempt >= REGISTER_TRIES) {
      throw new Error(`Cannot register a chain in session "${input.sessionId}": it keeps changing`);
    }
  }
}

/** The route, if its prompt leaves room for at least one token of output. */
function fits(route: RoutedTurn, contextLength: number): RoutedTurn {
  if (!route.replay && route.prompt.length >= contextLength) {
    throw new ContextOverflowError(route.prompt.length, contextLength);
  }
  return route;
}

/** One routing attempt; `null` when registering a new chain lost a race. */
async function tryRoute<Reply>(
  deps: RouteDeps,
  input: TurnInput<Reply>,
  register: boolean,
  contextLength: number,
): Promise<RoutedTurn | null> {
  const { kv } = deps;
  const [sessionEntry, agentChainId] = await Promise.all([
    liveSession(kv, input.sessionId),
    input.agent.id ? getAgentChain(kv, input.sessionId, input.agent.id) : null,
  ]);
  const session = sessionEntry.value;
  if (session.status !== "open") throw new SessionClosedError(input.sessionId);
  const ownId = input.agent.id ? agentChainId : session.mainChain;
  const own = ownId ? await getChain(kv, input.sessionId, ownId) : null;
  const ownHeader = own?.value?.turnCount ? own.value : null;

  // The history is the one this process recorded: only the new messages need hashing.
  const cached = ownHeader ? deps.cache.get(cacheKey(ownHeader), own!.versionstamp!) : null;
  if (ownHeader && cached?.conversation && extendsConversation(input, cached.conversation)) {
    const from = ownHeader.messageCount;
    const requestDigest = input.messageIdentities.slice(from).reduce(
      extendDigest,
      ownHeader.digest,
    );
    return extend(deps, input, "append", own as Deno.KvEntry<ChainHeader>, requestDigest, {
      history: cached.prompt,
      from,
      base: { turnCount: ownHeader.turnCount, lastRid: ownHeader.lastRid },
    });
  }

  const digests = prefixDigests(input.startIdentity, input.messageIdentities);
  const requestDigest = digests.at(-1)!;
  const bodyDigest = bodyDigestOf(input, requestDigest);
  const onChain = async (entry: Deno.KvEntry<ChainHeader>): Promise<RoutedTurn | null> => {
    const header = entry.value;
    if (classify(header, digests).kind === "append") {
      const history = cacheHit(deps, entry) ?? await readChainPrompt(deps, entry);
      return extend(deps, input, "append", entry, requestDigest, {
        history,
        from: header.messageCount,
        base: { turnCount: header.turnCount, lastRid: header.lastRid },
      });
    }
    const turns = liveTurns(await readAllTurns(kv, header.sessionId, header.id), header);
    const rewind = findRewind(turns, digests);
    if (!rewind) return null;
    const kept = turns.slice(0, rewind.keep);
    const base = { turnCount: rewind.keep, lastRid: kept.at(-1)?.rid ?? null };
    if (rewind.keep === 0) {
      input.verifyHistory();
      return whole(deps, input, "rewind", entry, requestDigest, base);
    }
    const history = await readTurnsPrompt(deps, header.sessionId, header.id, kept);
    return extend(deps, input, "rewind", entry, requestDigest, {
      history,
      from: rewind.from,
      base,
    });
  };

  if (ownHeader && classify(ownHeader, digests).kind === "append") {
    return await onChain(own as Deno.KvEntry<ChainHeader>);
  }
  const replay = await findReplay(kv, input.sessionId, bodyDigest);
  if (replay) {
    return {
      kind: "replay",
      chainId: replay.chainId,
      chain: { key: keys.chain(input.sessionId, replay.chainId), value: null, versionstamp: null },
      base: { turnCount: 0, lastRid: null },
      requestDigest,
      bodyDigest,
      replay,
      prompt: PromptIds.from([]),
      delta: [],
      startsInReasoning: false,
      tools: [],
    };
  }
  if (ownHeader) {
    const routed = await onChain(own as Deno.KvEntry<ChainHeader>);
    if (routed) return routed;
  }
  if (own?.value && !ownHeader) {
    // Registered by an earlier attempt whose turn was never recorded: start it now.
    input.verifyHistory();
    return whole(deps, input, "start", own as Deno.KvEntry<ChainHeader>, requestDigest, {
      turnCount: 0,
      lastRid: null,
    });
  }

  const entries = await listChainEntries(kv, input.sessionId);
  const headers = entries.map((entry) => entry.value);
  if (!input.agent.id) {
    // Side chains and sub-agents of clients that send no agent id are found by their history.
    for (const entry of entries) {
      const header = entry.value;
      if (header.id === session.mainChain || header.wipedAt !== null || header.turnCount === 0) {
        continue;
      }
      if (header.role === "main" || (header.role === "subagent" && header.agentId !== null)) {
        continue;
      }
      const routed = await onChain(entry);
      if (routed) return routed;
    }
  }

  // A new chain.
  input.verifyHistory();
  const main = headers.find((header) => header.id === session.mainChain) ?? null;
  const claimed = new Set(headers.flatMap((header) => header.dispatch ? [header.dispatch] : []));
  let plan: NewChain;
  if (input.agent.id) {
    const replaced = agentChainId
      ? headers.find((header) => header.id === agentChainId)
      : undefined;
    if (replaced) {
      plan = {
        kind: "subagent",
        role: "subagent",
        parent: replaced.parent,
        dispatch: replaced.dispatch,
        replaces: replaced,
      };
    } else {
      const parentChain = input.agent.parentId
        ? await getAgentChain(kv, input.sessionId, input.agent.parentId)
        : null;
      const parentId = parentChain ?? (main ? main.id : null);
      const parent = headers.find((header) => header.id === parentId) ?? null;
      const dispatch = parent ? await findDispatch(deps, input, parent, claimed) : null;
      plan = { kind: "subagent", role: "subagent", parent: parentId, dispatch, replaces: null };
    }
  } else if (!main || main.turnCount === 0) {
    plan = { kind: "start", role: "main", parent: null, dispatch: null, replaces: null };
  } else {
    const dispatch = digests[0] !== main.startDigest
      ? await findDispatch(deps, input, main, claimed)
      : null;
    if (dispatch) {
      plan = { kind: "subagent", role: "subagent", parent: main.id, dispatch, replaces: null };
    } else if (
      input.model !== main.model || (input.toolNames.length === 0 && main.tools.length > 0)
    ) {
      plan = { kind: "side", role: "side", parent: main.id, dispatch: null, replaces: null };
    } else {
      plan = { kind: "wipe", role: "main", parent: main.id, dispatch: null, replaces: main };
    }
  }

  const now = Date.now();
  const taken = new Set(headers.map((header) => header.id));
  const id = plan.role === "main" && !taken.has(session.mainChain) && !plan.replaces
    ? session.mainChain
    : newChainId(session, taken);
  const header: ChainHeader = {
    sessionId: input.sessionId,
    id,
    role: plan.role,
    wipedAt: null,
    parent: plan.parent,
    dispatch: plan.dispatch,
    agentId: input.agent.id,
    model: input.model,
    tools: input.toolNames,
    startDigest: digests[0],
    turnCount: 0,
    tokenCount: 0,
    messageCount: 0,
    digest: "",
    lastRid: null,
    createdAt: now,
    updatedAt: now,
  };
  const base = { turnCount: 0, lastRid: null };
  const planned = whole(
    deps,
    input,
    plan.kind,
    { key: keys.chain(input.sessionId, id), value: null, versionstamp: null },
    requestDigest,
    base,
  );
  // A prompt that cannot be served registers nothing (and wipes no conversation).
  if (!register) return planned;
  fits(planned, contextLength);
  if (session.chainCount >= MAX_CHAINS_PER_SESSION) {
    throw new LimitError(
      "messages",
      `session "${input.sessionId}" holds ${session.chainCount} chains, the most a session may hold; this request would start another`,
    );
  }

  const replaced = plan.replaces
    ? entries.find((entry) => entry.value.id === plan.replaces!.id) ?? null
    : null;
  const versionstamp = await registerChain(kv, {
    session: sessionEntry,
    next: {
      ...session,
      chainCount: session.chainCount + 1,
      mainChain: plan.role === "main" ? id : session.mainChain,
    },
    header,
    agentId: input.agent.id,
    retire: replaced?.value
      ? { entry: replaced, next: { ...replaced.value, wipedAt: now, updatedAt: now } }
      : undefined,
  });
  if (versionstamp === null) return null;
  return {
    ...planned,
    chain: { key: keys.chain(input.sessionId, id), value: header, versionstamp },
  };
}

/** What a new chain will be. */
interface NewChain {
  readonly kind: RouteKind;
  readonly role: ChainRole;
  readonly parent: string | null;
  readonly dispatch: string | null;
  /** The chain of the same agent this one replaces, marked wiped. */
  readonly replaces: ChainHeader | null;
}

/** The first free chain id (`c0`, `c1`…), keeping the main chain's reserved id. */
function newChainId(session: SessionRecord, taken: ReadonlySet<string>): string {
  for (let n = session.chainCount;; n++) {
    const id = `c${n}`;
    if (!taken.has(id) && id !== session.mainChain) return id;
  }
}

/**
 * The digest a retry of this request repeats: the conversation, every setting but `stream`, and
 * the agent it comes from — two sub-agents asking the same question are two requests.
 */
function bodyDigestOf<Reply>(input: TurnInput<Reply>, requestDigest: string): string {
  const body = extendDigest(requestDigest, input.settingsIdentity);
  return input.agent.id ? extendDigest(body, `agent:${input.agent.id}`) : body;
}

/** A chain's first turn: the whole conversation rendered. */
function whole<Reply>(
  deps: RouteDeps,
  input: TurnInput<Reply>,
  kind: RouteKind,
  chain: Deno.KvEntryMaybe<ChainHeader>,
  requestDigest: string,
  base: ChainBase,
): RoutedTurn {
  const rendered = renderPrompt(deps.tokenizer, input.prompt());
  return {
    kind,
    chainId: chain.key.at(-1) as string,
    chain,
    base,
    requestDigest,
    bodyDigest: bodyDigestOf(input, requestDigest),
    replay: null,
    prompt: PromptIds.from(rendered.tokens),
    delta: rendered.tokens,
    startsInReasoning: opensReasoning(rendered.text),
    tools: input.toolNames,
  };
}

/** A later turn: the chain's kept tokens plus the messages from `from` rendered. */
function extend<Reply>(
  deps: RouteDeps,
  input: TurnInput<Reply>,
  kind: RouteKind,
  chain: Deno.KvEntry<ChainHeader>,
  requestDigest: string,
  at: { history: PromptIds; from: number; base: ChainBase },
): RoutedTurn {
  const shown = chain.value.tools;
  const tools = [...new Set([...shown, ...input.toolNames])];
  if (tools.length > MAX_TOOLS) {
    throw new LimitError(
      "tools",
      `chain "${chain.value.id}" would have shown ${tools.length} distinct tools, at most ${MAX_TOOLS}`,
    );
  }
  const rendered = renderDelta(deps.tokenizer, input.lower(at.from, shown), input.enableThinking);
  return {
    kind,
    chainId: chain.value.id,
    chain,
    base: at.base,
    requestDigest,
    bodyDigest: bodyDigestOf(input, requestDigest),
    replay: null,
    prompt: at.history.concat(rendered.tokens),
    delta: rendered.tokens,
    startsInReasoning: opensReasoning(rendered.text),
    tools,
  };
}

/** True when the request repeats `known` exactly (same strings) and adds messages to it. */
function extendsConversation<Reply>(
  input: TurnInput<Reply>,
  known: NonNullable<CachedChain["conversation"]>,
): boolean {
  const ids = input.messageIdentities;
  if (input.startIdentity !== known.start || ids.length <= known.messages.length) return false;
  for (let i = 0; i < known.messages.length; i++) if (ids[i] !== known.messages[i]) return false;
  return true;
}

/**
 * The Agent/Task call on `parent` that dispatched the sub-agent making this request: the latest
 * one, not claimed by another chain, whose `prompt` is in the request's first user message.
 */
async function findDispatch<Reply>(
  deps: RouteDeps,
  input: TurnInput<Reply>,
  parent: ChainHeader,
  claimed: ReadonlySet<string>,
): Promise<string | null> {
  const task = input.firstUserText();
  if (!task || parent.turnCount === 0) return null;
  const turns = liveTurns(await readAllTurns(deps.kv, parent.sessionId, parent.id), parent);
  for (const turn of turns.slice(-DISPATCH_LOOKBACK_TURNS).reverse()) {
    if (turn.toolCalls === 0) continue;
    const tokens = await readTurnTokens(deps.kv, parent.sessionId, parent.id, turn);
    const end = { reason: turn.finishReason, stopSequence: turn.stopSequence };
    const { blocks } = parseTurnOutput(
      deps.tokenizer,
      Array.from(tokens.output),
      end,
      turn.startsInReasoning,
      turn.toolNames,
    );
    const calls = blocks.filter((block) => block.type === "tool_call");
    for (let i = calls.length - 1; i >= 0; i--) {
      const call = calls[i];
      const prompt = call.type === "tool_call" ? call.input.prompt : undefined;
      if (call.type !== "tool_call" || !DISPATCH_TOOLS.has(call.name)) continue;
      if (typeof prompt !== "string" || prompt.trim() === "" || !task.includes(prompt.trim())) {
        continue;
      }
      const id = input.toolUseId(turn.rid, i);
      if (!claimed.has(id)) return id;
    }
  }
  return null;
}

/** The live turn that answered this body before, in any chain of the session. */
async function findReplay(
  kv: Deno.Kv,
  sessionId: string,
  bodyDigest: string,
): Promise<RoutedTurn["replay"]> {
  const entry = await getReplay(kv, sessionId, bodyDigest);
  if (!entry) return null;
  const chain = await getChain(kv, sessionId, entry.chainId);
  if (!chain.value) return null;
  const live = liveTurns(await readAllTurns(kv, sessionId, entry.chainId), chain.value);
  const record = live[entry.index];
  return record?.rid === entry.rid ? { chainId: entry.chainId, record } : null;
}

/** The chain's tokens from this process's cache, when it holds this version. */
function cacheHit(deps: RouteDeps, chain: Deno.KvEntry<ChainHeader>): PromptIds | null {
  return deps.cache.get(cacheKey(chain.value), chain.versionstamp)?.prompt ?? null;
}

/** The chain's tokens, read from KV once (when this process has not cached this version). */
async function readChainPrompt(
  deps: RouteDeps,
  chain: Deno.KvEntry<ChainHeader>,
): Promise<PromptIds> {
  const header = chain.value;
  const turns = liveTurns(await readAllTurns(deps.kv, header.sessionId, header.id), header);
  const prompt = await readTurnsPrompt(deps, header.sessionId, header.id, turns);
  deps.cache.put(cacheKey(header), chain.versionstamp, { prompt, conversation: null });
  return prompt;
}

/** The tokens of the given turns, in order. */
async function readTurnsPrompt(
  deps: RouteDeps,
  sessionId: string,
  chainId: string,
  turns: readonly TurnRecord[],
): Promise<PromptIds> {
  let prompt = PromptIds.from([]);
  for (const record of turns) {
    const turn = await readTurnTokens(deps.kv, sessionId, chainId, record);
    prompt = prompt.concat(turn.delta).concat(turn.output).concat(turn.closing);
  }
  return prompt;
}
