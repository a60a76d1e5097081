/**
 * One turn of a session, protocol-neutral: route the request to its chain, build the prompt from
 * the chain's recorded tokens plus the delta of the new messages (T2, T3), generate, parse the
 * sampled tokens (T6), and record the turn in one atomic commit (T1, T5) before answering.
 *
 * A turn runs in two steps so a streaming caller can answer errors with an HTTP status until
 * generation starts: {@linkcode prepareTurn} does everything that can reject the request, and
 * {@linkcode completeTurn} generates and records.
 *
 * @module
 */
import {
  type Classification,
  classify,
  closingTokens,
  survivesRoundTrip,
  type TurnEnd,
  turnEnd,
} from "../chain/mod.ts";
import { type ChatMessage, type ChatPrompt, extendDigest, prefixDigests } from "../chat/mod.ts";
import {
  type Engine,
  newRid,
  PromptIds,
  type SamplingParams,
  samplingParams,
  type SamplingRequest,
} from "../engine/mod.ts";
import {
  type ChainCache,
  type ChainHeader,
  commitTurn,
  encodeTurnTokens,
  getChain,
  getSession,
  keys,
  readTurns,
  readTurnTokens,
  type SessionRecord,
  type TurnRecord,
} from "../kv/mod.ts";
import type { RoundtripPolicy } from "../config/mod.ts";
import {
  type ChatTokenizer,
  opensReasoning,
  type OutputBlock,
  parseOutput,
  renderDelta,
  renderPrompt,
} from "../template/mod.ts";
import { SessionClosedError, SessionNotFoundError } from "./session.ts";

/** What a turn needs from the outside world. */
export interface TurnDeps {
  readonly kv: Deno.Kv;
  readonly tokenizer: ChatTokenizer;
  readonly engine: Engine;
  /** Recent chains, by chain header version. */
  readonly cache: ChainCache<CachedChain>;
  readonly contextLength: number;
  readonly roundtripPolicy: RoundtripPolicy;
}

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

/** A request as the protocol adapter presents it to the session. */
export interface TurnInput<Reply> {
  readonly sessionId: string;
  /** Identity of the conversation's start (system prompt and tools). */
  readonly startIdentity: string;
  /** Identity of each message of the request. */
  readonly messageIdentities: readonly string[];
  /** The whole conversation as the template renders it, for a chain's first turn. */
  prompt(): ChatPrompt;
  /** Messages `from..` lowered, for a delta. */
  lower(from: number): ChatMessage[];
  /** Checks history the gateway did not record itself, before it starts a chain. */
  verifyHistory(): void;
  readonly enableThinking?: boolean;
  readonly toolNames: readonly string[];
  readonly sampling: SamplingRequest;
  readonly model: string;
  /** Builds the client's reply from the parsed output, and that reply's message identity. */
  reply(output: TurnOutput): { reply: Reply; identity: string };
}

/** The parsed result of a turn, handed to the adapter to build its reply. */
export interface TurnOutput {
  readonly rid: string;
  readonly blocks: readonly OutputBlock[];
  readonly end: TurnEnd;
  readonly inputTokens: number;
  readonly outputTokens: number;
}

/** The prompt does not fit the context window (HTTP 400 in Anthropic's wording). */
export class ContextOverflowError extends Error {
  constructor(readonly promptTokens: number, readonly contextLength: number) {
    super(`prompt is too long: ${promptTokens} tokens > ${contextLength - 1} maximum`);
    this.name = "ContextOverflowError";
  }
}

/** The chain changed while this turn generated; the turn was not recorded (HTTP 409). */
export class ChainConflictError extends Error {
  constructor(sessionId: string, chainId: string) {
    super(
      `Chain "${chainId}" of session "${sessionId}" changed during this turn; it was not recorded`,
    );
    this.name = "ChainConflictError";
  }
}

/** A turn ready to generate. */
export interface PreparedTurn<Reply> {
  readonly input: TurnInput<Reply>;
  readonly chainId: string;
  readonly classification: Classification;
  /** Engine request id of the turn, known before generation so a stream can name its message. */
  readonly rid: string;
  /** Tokens in the prompt. */
  readonly promptTokens: number;
  readonly sampling: SamplingParams;
  /** @internal */
  readonly state: PreparedState;
}

interface PreparedState extends RoutedPrompt {
  readonly started: number;
  readonly renderMs: number;
}

/** A request routed to its chain, with its prompt built. */
interface RoutedPrompt {
  readonly session: Deno.KvEntry<SessionRecord>;
  readonly chainId: string;
  readonly chain: Deno.KvEntryMaybe<ChainHeader>;
  readonly retire: Deno.KvEntry<ChainHeader> | null;
  readonly classification: Classification;
  /** Prefix digest of the request's whole conversation. */
  readonly requestDigest: string;
  /** The whole prompt: the chain's tokens followed by the delta. */
  readonly prompt: PromptIds;
  /** Tokens this turn adds before its output (the whole prompt on a chain's first turn). */
  readonly delta: number[];
  readonly startsInReasoning: boolean;
}

/** Routes a request to its chain and builds the prompt: the chain's tokens plus the delta. */
async function routePrompt<Reply>(deps: TurnDeps, input: TurnInput<Reply>): Promise<RoutedPrompt> {
  const session = await getSession(deps.kv, input.sessionId);
  if (!session.value) throw new SessionNotFoundError(input.sessionId);
  if (session.value.status !== "open") throw new SessionClosedError(input.sessionId);
  let chainId = session.value.mainChain;
  let chain = await getChain(deps.kv, input.sessionId, chainId);
  const cached = chain.value ? deps.cache.get(cacheKey(chain.value), chain.versionstamp!) : null;
  let classification: Classification;
  let requestDigest: string;
  if (chain.value && cached?.conversation && extendsConversation(input, cached.conversation)) {
    // The history is the one this process recorded: only the new messages need hashing.
    const from = chain.value.messageCount;
    classification = { kind: "append", from };
    requestDigest = input.messageIdentities.slice(from).reduce(extendDigest, chain.value.digest);
  } else {
    const digests = prefixDigests(input.startIdentity, input.messageIdentities);
    classification = classify(chain.value, digests);
    requestDigest = digests.at(-1)!;
  }
  let retire: Deno.KvEntry<ChainHeader> | null = null;
  let history: PromptIds | null = null;
  let rendered;
  if (classification.kind === "append") {
    rendered = renderDelta(deps.tokenizer, input.lower(classification.from), input.enableThinking);
    history = cached?.prompt ?? await readChainPrompt(deps, chain as Deno.KvEntry<ChainHeader>);
  } else {
    input.verifyHistory();
    if (classification.kind === "diverge") {
      retire = chain as Deno.KvEntry<ChainHeader>;
      chainId = `c${session.value.chains.length}`;
      chain = { key: keys.chain(input.sessionId, chainId), value: null, versionstamp: null };
    }
    rendered = renderPrompt(deps.tokenizer, input.prompt());
  }
  return {
    session: session as Deno.KvEntry<SessionRecord>,
    chainId,
    chain,
    retire,
    classification,
    requestDigest,
    prompt: history ? history.concat(rendered.tokens) : PromptIds.from(rendered.tokens),
    delta: rendered.tokens,
    startsInReasoning: opensReasoning(rendered.text),
  };
}

/**
 * Routes the request and builds its prompt. Throws before anything is generated or written.
 *
 * @throws {SessionNotFoundError}, {SessionClosedError}, {ContextOverflowError}, and the
 * adapter's own errors from `lower` and `verifyHistory`.
 */
export async function prepareTurn<Reply>(
  deps: TurnDeps,
  input: TurnInput<Reply>,
): Promise<PreparedTurn<Reply>> {
  const started = performance.now();
  const routed = await routePrompt(deps, input);
  const promptTokens = routed.prompt.length;
  if (promptTokens >= deps.contextLength) {
    throw new ContextOverflowError(promptTokens, deps.contextLength);
  }
  return {
    input,
    chainId: routed.chainId,
    classification: routed.classification,
    rid: newRid(),
    promptTokens,
    sampling: samplingParams(input.sampling, {
      promptLength: promptTokens,
      contextLength: deps.contextLength,
      eosId: deps.tokenizer.eosId,
    }),
    state: { ...routed, started, renderMs: performance.now() - started },
  };
}

/**
 * Tokens of the prompt this request would send the engine, as `usage.input_tokens` would report
 * them: the chain's tokens plus the delta when the request extends the session's chain, else
 * the template's rendering of the whole conversation. Writes nothing.
 *
 * @example
 * ```ts
 * const inputTokens = await countPromptTokens(deps, input, { sessionExists: true });
 * ```
 */
export async function countPromptTokens<Reply>(
  deps: TurnDeps,
  input: TurnInput<Reply>,
  options: { sessionExists: boolean },
): Promise<number> {
  if (options.sessionExists) return (await routePrompt(deps, input)).prompt.length;
  input.verifyHistory();
  return renderPrompt(deps.tokenizer, input.prompt()).tokens.length;
}

/**
 * Generates the turn and records it, then returns the reply. When `signal` aborts, the engine
 * request is aborted and nothing is recorded.
 *
 * @throws {ChainConflictError} when the chain moved on during generation, and the engine's
 * errors.
 */
export async function completeTurn<Reply>(
  deps: TurnDeps,
  prepared: PreparedTurn<Reply>,
  signal?: AbortSignal,
): Promise<Reply> {
  const { input, state, chainId } = prepared;
  const { tokenizer } = deps;
  const generation = await deps.engine.generate({
    rid: prepared.rid,
    inputIds: state.prompt,
    sampling: prepared.sampling,
    signal,
  });
  signal?.throwIfAborted();

  const output = generation.outputIds;
  const end = turnEnd(generation.finish);
  const closing = closingTokens(output, tokenizer.eosId);
  const flags: string[] = [];
  let masked = false;
  if (!survivesRoundTrip(output, tokenizer)) {
    flags.push("roundtrip_mismatch");
    masked = deps.roundtripPolicy === "mask";
  }
  const parsed = parseOutput(answerText(tokenizer, output, end), {
    startsInReasoning: state.startsInReasoning,
    toolNames: new Set(input.toolNames),
  });
  if (parsed.illFormed.length > 0) flags.push("ill_formed");
  if (generation.aborts > 0) flags.push("engine_aborted");
  if (masked) flags.push("masked");
  const { reply, identity } = input.reply({
    rid: generation.rid,
    blocks: parsed.blocks,
    end,
    inputTokens: prepared.promptTokens,
    outputTokens: output.length,
  });

  const previous = state.chain.value;
  const messageCount = input.messageIdentities.length + 1;
  const digest = extendDigest(state.requestDigest, identity);
  const now = Date.now();
  const chunks = encodeTurnTokens({
    delta: state.delta,
    output,
    logprobs: generation.logprobs,
    closing,
  });
  const turn: TurnRecord = {
    index: previous?.turnCount ?? 0,
    rid: generation.rid,
    inputLen: prepared.promptTokens,
    deltaLen: state.delta.length,
    outputLen: output.length,
    closingLen: closing.length,
    finishReason: end.reason,
    stopSequence: end.stopSequence,
    flags,
    masked,
    weightVersions: generation.weightVersions,
    aborts: generation.aborts,
    startsInReasoning: state.startsInReasoning,
    toolNames: input.toolNames,
    model: input.model,
    messageCount,
    digest,
    chunks: chunks.length,
    createdAt: now,
    timings: {
      renderMs: state.renderMs,
      engineMs: generation.engineMs,
      engineReportedMs: generation.engineReportedMs,
      totalMs: performance.now() - state.started,
    },
  };
  const header: ChainHeader = {
    sessionId: input.sessionId,
    id: chainId,
    kind: "final",
    turnCount: turn.index + 1,
    tokenCount: prepared.promptTokens + output.length + closing.length,
    messageCount,
    digest,
    createdAt: previous?.createdAt ?? now,
    updatedAt: now,
  };
  const session = state.session.value;
  const newChain = previous === null;
  signal?.throwIfAborted();
  const versionstamp = await commitTurn(deps.kv, {
    chain: state.chain,
    header,
    turn,
    chunks,
    session: newChain
      ? {
        entry: state.session,
        next: { ...session, chains: [...session.chains, chainId], mainChain: chainId },
      }
      : undefined,
    retire: state.retire?.value
      ? { entry: state.retire, next: { ...state.retire.value, kind: "wipe", updatedAt: now } }
      : undefined,
  });
  if (versionstamp === null) throw new ChainConflictError(input.sessionId, chainId);
  deps.cache.put(cacheKey(header), versionstamp, {
    prompt: state.prompt.concat([...output, ...closing]),
    conversation: { start: input.startIdentity, messages: [...input.messageIdentities, identity] },
  });
  return reply;
}

/** The text the agent reads: the output without its end-of-turn token or matched stop string. */
function answerText(tokenizer: ChatTokenizer, output: readonly number[], end: TurnEnd): string {
  const sampled = output.at(-1) === tokenizer.eosId ? output.slice(0, -1) : output;
  const text = tokenizer.decode(sampled);
  if (end.stopSequence === null) return text;
  const at = text.lastIndexOf(end.stopSequence);
  return at >= 0 ? text.slice(0, at) : text;
}

/** The cache key of a chain. */
function cacheKey(chain: { sessionId: string; id: string }): string {
  return `${chain.sessionId}/${chain.id}`;
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

/** The chain's tokens, read from KV once (when this process has not cached this version). */
async function readChainPrompt(
  deps: TurnDeps,
  chain: Deno.KvEntry<ChainHeader>,
): Promise<PromptIds> {
  const { sessionId, id, turnCount } = chain.value;
  let prompt = PromptIds.from([]);
  for (const record of await readTurns(deps.kv, sessionId, id, turnCount)) {
    const turn = await readTurnTokens(deps.kv, sessionId, id, record);
    prompt = prompt.concat(turn.delta).concat(turn.output).concat(turn.closing);
  }
  deps.cache.put(cacheKey(chain.value), chain.versionstamp, { prompt, conversation: null });
  return prompt;
}
