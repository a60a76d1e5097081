/**
 * Routing a request to its chain and building its prompt (DESIGN §4): append to the chain, replay
 * a turn already answered, rewind to an earlier turn boundary, or start a chain — a new main chain
 * when the request no longer extends the current one (its old chain becomes a `wipe`).
 *
 * @module
 */
import { type Classification, classify, findRewind } from "../chain/mod.ts";
import { extendDigest, prefixDigests } from "../chat/mod.ts";
import { PromptIds } from "../engine/mod.ts";
import {
  type ChainCache,
  type ChainHeader,
  getChain,
  getReplay,
  getSession,
  keys,
  liveTurns,
  readAllTurns,
  readTurnTokens,
  type SessionRecord,
  type TurnRecord,
} from "../kv/mod.ts";
import { type ChatTokenizer, opensReasoning, renderDelta, renderPrompt } from "../template/mod.ts";
import { SessionClosedError, SessionNotFoundError } from "./session.ts";
import type { TurnInput } from "./turn_input.ts";

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

/** How a request was routed: what the turn replays, or what it appends to. */
export type RouteKind = Classification["kind"] | "replay" | "rewind";

/** The chain state a new turn builds on (the kept part of the chain after a rewind). */
export interface ChainBase {
  readonly turnCount: number;
  readonly lastRid: string | null;
  readonly createdAt: number | null;
}

/** A request routed to its chain. */
export interface RoutedTurn {
  readonly kind: RouteKind;
  readonly session: Deno.KvEntry<SessionRecord>;
  readonly chainId: string;
  /** The chain header as read (`value: null` for a new chain): the commit checks it. */
  readonly chain: Deno.KvEntryMaybe<ChainHeader>;
  /** The main chain this request replaces, to be marked `wipe`. */
  readonly retire: Deno.KvEntry<ChainHeader> | null;
  readonly base: ChainBase;
  /** Prefix digest of the request's whole conversation. */
  readonly requestDigest: string;
  /** Digest of the whole normalized request body. */
  readonly bodyDigest: string;
  /** The recorded turn a replay answers with. */
  readonly replay: { readonly chainId: string; readonly record: TurnRecord } | null;
  /** The whole prompt: the chain's kept tokens followed by the delta (empty for a replay). */
  readonly prompt: PromptIds;
  /** Tokens this turn adds before its output (the whole prompt on a chain's first turn). */
  readonly delta: number[];
  readonly startsInReasoning: boolean;
}

/** The cache key of a chain. */
export function cacheKey(chain: { sessionId: string; id: string }): string {
  return `${chain.sessionId}/${chain.id}`;
}

/**
 * Routes a request to the session's main chain and builds its prompt. Reads only.
 *
 * @throws {SessionNotFoundError}, {SessionClosedError}, and the adapter's errors from `lower`
 * and `verifyHistory`.
 */
export async function routeTurn<Reply>(
  deps: RouteDeps,
  input: TurnInput<Reply>,
): Promise<RoutedTurn> {
  const session = await getSession(deps.kv, input.sessionId);
  if (!session.value) throw new SessionNotFoundError(input.sessionId);
  if (session.value.status !== "open") throw new SessionClosedError(input.sessionId);
  const sessionEntry = session as Deno.KvEntry<SessionRecord>;
  const chainId = session.value.mainChain;
  const chain = await getChain(deps.kv, input.sessionId, chainId);
  const header = chain.value;
  const cached = header ? deps.cache.get(cacheKey(header), chain.versionstamp!) : null;
  const routed = (
    kind: RouteKind,
    fields: Partial<RoutedTurn> & { requestDigest: string },
  ): RoutedTurn => ({
    kind,
    session: sessionEntry,
    chainId,
    chain,
    retire: null,
    base: {
      turnCount: header?.turnCount ?? 0,
      lastRid: header?.lastRid ?? null,
      createdAt: header?.createdAt ?? null,
    },
    bodyDigest: extendDigest(fields.requestDigest, input.settingsIdentity),
    replay: null,
    prompt: PromptIds.from([]),
    delta: [],
    startsInReasoning: false,
    ...fields,
  });

  // The history is the one this process recorded: only the new messages need hashing.
  if (header && cached?.conversation && extendsConversation(input, cached.conversation)) {
    const from = header.messageCount;
    const requestDigest = input.messageIdentities.slice(from).reduce(extendDigest, header.digest);
    return routed("append", { requestDigest, ...delta(deps, input, cached.prompt, from) });
  }

  const digests = prefixDigests(input.startIdentity, input.messageIdentities);
  const requestDigest = digests.at(-1)!;
  const classification = classify(header, digests);
  if (classification.kind === "append") {
    const history = cached?.prompt ??
      await readChainPrompt(deps, chain as Deno.KvEntry<ChainHeader>);
    return routed("append", { requestDigest, ...delta(deps, input, history, classification.from) });
  }

  const bodyDigest = extendDigest(requestDigest, input.settingsIdentity);
  const replay = await findReplay(deps.kv, input.sessionId, bodyDigest);
  if (replay) return routed("replay", { requestDigest, replay });

  if (header) {
    const turns = liveTurns(await readAllTurns(deps.kv, input.sessionId, chainId), header);
    const rewind = findRewind(turns, digests);
    if (rewind) {
      const kept = turns.slice(0, rewind.keep);
      const base = {
        turnCount: rewind.keep,
        lastRid: kept.at(-1)?.rid ?? null,
        createdAt: header.createdAt,
      };
      if (rewind.keep === 0) {
        input.verifyHistory();
        return routed("rewind", { requestDigest, base, ...whole(deps, input) });
      }
      const history = await readTurnsPrompt(deps, input.sessionId, chainId, kept);
      return routed("rewind", { requestDigest, base, ...delta(deps, input, history, rewind.from) });
    }
  }

  input.verifyHistory();
  if (!header) return routed("start", { requestDigest, ...whole(deps, input) });
  const newId = `c${session.value.chains.length}`;
  return routed("diverge", {
    requestDigest,
    chainId: newId,
    chain: { key: keys.chain(input.sessionId, newId), value: null, versionstamp: null },
    retire: chain as Deno.KvEntry<ChainHeader>,
    base: { turnCount: 0, lastRid: null, createdAt: null },
    ...whole(deps, input),
  });
}

/** The prompt of a chain's first turn: the whole conversation rendered. */
function whole<Reply>(deps: RouteDeps, input: TurnInput<Reply>) {
  const rendered = renderPrompt(deps.tokenizer, input.prompt());
  return {
    prompt: PromptIds.from(rendered.tokens),
    delta: rendered.tokens,
    startsInReasoning: opensReasoning(rendered.text),
  };
}

/** The prompt of a later turn: the chain's tokens plus the messages from `from` rendered. */
function delta<Reply>(deps: RouteDeps, input: TurnInput<Reply>, history: PromptIds, from: number) {
  const rendered = renderDelta(deps.tokenizer, input.lower(from), input.enableThinking);
  return {
    prompt: history.concat(rendered.tokens),
    delta: rendered.tokens,
    startsInReasoning: opensReasoning(rendered.text),
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

/** The chain's tokens, read from KV once (when this process has not cached this version). */
async function readChainPrompt(
  deps: RouteDeps,
  chain: Deno.KvEntry<ChainHeader>,
): Promise<PromptIds> {
  const turns = liveTurns(
    await readAllTurns(deps.kv, chain.value.sessionId, chain.value.id),
    chain.value,
  );
  const prompt = await readTurnsPrompt(deps, chain.value.sessionId, chain.value.id, turns);
  deps.cache.put(cacheKey(chain.value), chain.versionstamp, { prompt, conversation: null });
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
