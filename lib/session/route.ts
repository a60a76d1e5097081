/**
 * Routing a request to its chain and building its prompt (docs/DESIGN.md §4). The planner
 * (`route_plan.ts`) decides; this module reads what it asks for (`route_snapshot.ts`), then
 * carries the plan out: the kept tokens of the chain (from this process's cache or KV), the
 * delta rendered after them or the whole conversation rendered for a new chain, and the one KV
 * write a plan may need — registering a new chain, or reopening a chain another had replaced.
 *
 * @module
 */
import {
  type ChainHeader,
  deltaAfter,
  type TurnImage,
  type TurnMessages,
  type TurnRecord,
} from "../chain/mod.ts";
import { type ChatImage, takeImageData } from "../chat/mod.ts";
import { PromptIds } from "../engine/mod.ts";
import { keys } from "../kv/mod.ts";
import {
  getChain,
  readChainTokens,
  readLiveTurns,
  registerChain,
  reopenChain,
} from "./session_store.ts";
import { LimitError, MAX_CHAINS_PER_SESSION } from "../limits/mod.ts";
import type { GatewayMetrics } from "../metrics/mod.ts";
import { OverBudgetError } from "../tokenizer/mod.ts";
import { opensReasoning, type PromptEncoder, type Rendered } from "../template/mod.ts";
import { ContextOverflowError } from "./errors.ts";
import { liveEntry } from "./lifecycle.ts";
import type { SessionRecord } from "./records.ts";
import {
  type ExtendPlan,
  newChainHeader,
  planRoute,
  type RegisterPlan,
  type RouteChain,
  type RouteKind,
  type RoutePolicy,
  type RouteRequest,
  type RouteSnapshot,
} from "./route_plan.ts";
import {
  cacheKey,
  firstSnapshot,
  readNeed,
  readRouteSnapshot,
  type ReadSnapshot,
  type SnapshotDeps,
} from "./route_snapshot.ts";
import type { TurnInput } from "./turn_input.ts";

/** Attempts at a plan while other requests change the session under it. */
const ROUTE_TRIES = 8;

/** What routing reads. */
export interface RouteDeps extends SnapshotDeps {
  readonly routePolicy: RoutePolicy;
  /** Renders and encodes the new text of a turn, off the event loop (`lib/template`). */
  readonly encoder: PromptEncoder;
  /** Counts turns, tokens, flags and commit retries; nothing is counted without it. */
  readonly metrics?: GatewayMetrics;
}

/** How big a prompt may grow, and the caller's signal (its client left: the work stops). */
export interface RouteLimits {
  /** Most tokens of a prompt, output included: a prompt must leave room for one. */
  readonly contextLength: number;
  readonly signal?: AbortSignal;
}

/** The chain state a new turn builds on (the kept part of the chain after a rewind). */
export interface ChainBase {
  readonly turnCount: number;
  readonly lastRid: string | null;
  /** Some kept turn's output holds reasoning. */
  readonly reasoning: boolean;
}

/** A request routed to its chain. */
export interface RoutedTurn {
  readonly kind: RouteKind;
  readonly sessionId: string;
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
  /** The prompt's images in order: the kept history's, then the delta's (`images`). */
  readonly promptImages: readonly TurnImage[];
  /** The images the delta adds (recorded with the turn). */
  readonly images: readonly TurnImage[];
  /** The bytes (base64) of the delta's images, by digest. */
  readonly imageData: ReadonlyMap<string, string>;
  readonly startsInReasoning: boolean;
  /**
   * Names of the tools the model has been told are offered once this turn is recorded: the
   * request's (a delta's note tells the model of tools added and withdrawn since the last turn).
   */
  readonly tools: readonly string[];
  /** The canonical messages rendered into `delta` (`null` for a replay). */
  readonly messages: TurnMessages | null;
  /** The session keeps each turn's request messages (`record_messages`). */
  readonly recordMessages: boolean;
  /** The chain this turn's new chain wiped: it can no longer continue (unless reopened). */
  readonly retired?: string;
}

/** The planner's view of a turn's request. */
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
 * Routes a request and builds its prompt. With `register`, the plan's KV write is made (a new
 * chain registered, the conversation it replaces wiped; or a replaced chain reopened); without
 * it nothing is written (to count tokens).
 *
 * @throws {SessionNotFoundError}, {SessionClosedError}, {ContextOverflowError} (as soon as the
 * new text's tokens pass what the context can take), {LimitError}, {EncodeCancelledError} when
 * `signal` aborts while the new text is encoded, and the adapter's errors from `lower` and
 * `verifyHistory`.
 */
export async function routeTurn<Reply>(
  deps: RouteDeps,
  input: TurnInput<Reply>,
  options: { register: boolean; contextLength?: number; signal?: AbortSignal },
): Promise<RoutedTurn> {
  const request = routeRequest(input);
  const limits = { contextLength: options.contextLength ?? Infinity, signal: options.signal };
  for (let attempt = 1;; attempt++) {
    const read = await readRouteSnapshot(deps, input);
    let snapshot = read.snapshot;
    let plan = planRoute(snapshot, request, deps.routePolicy);
    while ("need" in plan) {
      snapshot = await readNeed(deps, input, snapshot, plan);
      plan = planRoute(snapshot, request, deps.routePolicy);
    }
    let routed: RoutedTurn | null;
    if (plan.act === "replay") {
      routed = {
        kind: "replay",
        sessionId: input.sessionId,
        chainId: plan.chainId,
        chain: { key: keys.chain(input.sessionId, plan.chainId), value: null, versionstamp: null },
        base: { turnCount: 0, lastRid: null, reasoning: false },
        requestDigest: plan.requestDigest,
        bodyDigest: plan.bodyDigest,
        replay: { chainId: plan.chainId, record: plan.record },
        prompt: PromptIds.from([]),
        delta: [],
        promptImages: [],
        images: [],
        imageData: new Map(),
        startsInReasoning: false,
        tools: [],
        messages: null,
        recordMessages: false,
      };
    } else if (plan.act === "extend") {
      routed = await extendChain(
        deps,
        input,
        read,
        snapshot,
        plan,
        options.register,
        limits,
      );
    } else {
      routed = await startChain(
        deps,
        input,
        request,
        read,
        snapshot,
        plan,
        options.register,
        limits,
      );
    }
    if (routed !== null) {
      return fits(
        { ...routed, recordMessages: snapshot.session.recordMessages === true },
        limits.contextLength,
      );
    }
    if (attempt >= ROUTE_TRIES) {
      throw new Error(`Cannot route a turn in session "${input.sessionId}": it keeps changing`);
    }
  }
}

/**
 * Routes the common turn without the session's lease: a request of the main agent that extends
 * its chain, when the session entry `session` (read a moment ago) and that chain are all the plan
 * needs and it writes nothing. `null` when the plan needs more. `reads` are the two entries as
 * routed on: the caller takes the chain's lease in one commit that checks them (and that the
 * session's lease is free), so a route on a state that has moved since is never used.
 *
 * The route is built on the header this process cached, unread (`unread`): it is usually what KV
 * holds, and the lease's commit checks it is. Without one, or given `head` (the chain as read
 * after such a commit failed), it is built on what KV holds.
 *
 * @throws what {@linkcode routeTurn} throws, judged on that state.
 */
export async function routeExtension<Reply>(
  deps: RouteDeps,
  input: TurnInput<Reply>,
  options: {
    session: Deno.KvEntry<SessionRecord>;
    contextLength?: number;
    signal?: AbortSignal;
    head?: Deno.KvEntryMaybe<ChainHeader>;
  },
): Promise<{ route: RoutedTurn; reads: Deno.AtomicCheck[]; unread: boolean } | null> {
  const session = liveEntry(options.session);
  const limits = { contextLength: options.contextLength ?? Infinity, signal: options.signal };
  const chainId = session.value.mainChain;
  if (input.agent.id !== null || chainId === null) return null;
  const cached = options.head
    ? null
    : deps.cache.latest(cacheKey({ sessionId: input.sessionId, id: chainId }));
  if (cached) {
    const own = { header: cached.value.header, versionstamp: cached.versionstamp };
    const routed = await routeOn(deps, input, session, own, limits);
    return routed && { ...routed, unread: true };
  }
  const read = options.head ?? await getChain(deps.kv, input.sessionId, chainId);
  if (read.value === null) return null;
  const own = { header: read.value, versionstamp: read.versionstamp! };
  const routed = await routeOn(deps, input, session, own, limits);
  return routed && { ...routed, unread: false };
}

/** {@linkcode routeExtension} on the session and chain entries given. */
async function routeOn<Reply>(
  deps: RouteDeps,
  input: TurnInput<Reply>,
  session: Deno.KvEntry<SessionRecord>,
  own: RouteChain,
  limits: RouteLimits,
): Promise<{ route: RoutedTurn; reads: Deno.AtomicCheck[] } | null> {
  const read = firstSnapshot(deps, session, own);
  const { snapshot } = read;
  const plan = planRoute(snapshot, routeRequest(input), deps.routePolicy);
  if ("need" in plan || plan.act !== "extend" || plan.reopen) return null;
  const routed = await extendChain(deps, input, read, snapshot, plan, false, limits);
  if (routed === null) return null;
  const route = fits(
    { ...routed, recordMessages: snapshot.session.recordMessages === true },
    limits.contextLength,
  );
  return {
    route,
    reads: [
      { key: session.key, versionstamp: session.versionstamp },
      { key: route.chain.key, versionstamp: own.versionstamp },
    ],
  };
}

/** The route, if its prompt leaves room for at least one token of output. */
function fits(route: RoutedTurn, contextLength: number): RoutedTurn {
  if (!route.replay && route.prompt.length >= contextLength) {
    throw new ContextOverflowError(route.prompt.length, contextLength);
  }
  return route;
}

/** Continues an existing chain: its kept tokens, then the new messages (or all of them). */
async function extendChain<Reply>(
  deps: RouteDeps,
  input: TurnInput<Reply>,
  read: ReadSnapshot,
  snapshot: RouteSnapshot,
  plan: ExtendPlan,
  register: boolean,
  limits: RouteLimits,
): Promise<RoutedTurn | null> {
  const chain = snapshot.chains.get(plan.chainId)!;
  const header = chain.header;
  const whole = header.turnCount === plan.keep;
  const turns = whole ? null : chain.turns!.slice(0, plan.keep);
  const base: ChainBase = {
    turnCount: plan.keep,
    lastRid: whole ? header.lastRid : turns!.at(-1)?.rid ?? null,
    reasoning: whole ? header.reasoning : turns!.some((turn) => turn.reasoning),
  };
  let entry: Deno.KvEntryMaybe<ChainHeader> = {
    key: keys.chain(header.sessionId, header.id),
    value: header,
    versionstamp: chain.versionstamp,
  };
  let routed: RoutedTurn;
  if (plan.keep === 0) {
    input.verifyHistory();
    routed = await wholePrompt(deps, input, plan, header.id, entry, base, limits);
  } else {
    const history = whole
      ? cacheHit(deps, chain) ?? await readChainPrompt(deps, chain)
      : await readTurnsPrompt(deps, header, turns!);
    // The tools the model knew at the end of the kept turns: a rewind goes back past the notes
    // of the turns it drops.
    const known = whole ? header.tools : turns!.at(-1)!.toolNames;
    routed = await delta(deps, input, plan, entry, history, base, known, limits);
  }
  if (!plan.reopen || !register) return routed;
  // A replaced chain becomes current again; its replacement is wiped, in one commit.
  fits(routed, limits.contextLength);
  const retire = plan.reopen.retire ? snapshot.chains.get(plan.reopen.retire) ?? null : null;
  const now = Date.now();
  const reopened: ChainHeader = { ...header, wipedAt: null, updatedAt: now };
  const versionstamp = await reopenChain(deps.kv, {
    session: { record: snapshot.session, versionstamp: read.sessionVersionstamp },
    next: header.role === "main" ? { ...snapshot.session, mainChain: header.id } : null,
    chain: { header: reopened, versionstamp: chain.versionstamp },
    agentId: header.role === "main" ? null : header.agentId,
    retire: retire
      ? {
        header: { ...retire.header, wipedAt: now, updatedAt: now },
        versionstamp: retire.versionstamp,
      }
      : null,
    metrics: deps.metrics,
  });
  if (versionstamp === null) return null;
  entry = { key: entry.key, value: reopened, versionstamp };
  return { ...routed, chain: entry };
}

/** Registers a new chain and renders the whole conversation as its first prompt. */
async function startChain<Reply>(
  deps: RouteDeps,
  input: TurnInput<Reply>,
  request: RouteRequest,
  read: ReadSnapshot,
  snapshot: RouteSnapshot,
  plan: RegisterPlan,
  register: boolean,
  limits: RouteLimits,
): Promise<RoutedTurn | null> {
  input.verifyHistory();
  const { session } = snapshot;
  const now = Date.now();
  const header = newChainHeader(session.id, plan, request, now);
  const key = keys.chain(session.id, plan.chainId);
  const base = { turnCount: 0, lastRid: null, reasoning: false };
  const planned = await wholePrompt(
    deps,
    input,
    plan,
    plan.chainId,
    { key, value: null, versionstamp: null },
    base,
    limits,
  );
  // A prompt that cannot be served registers nothing (and wipes no conversation).
  if (!register) return planned;
  fits(planned, limits.contextLength);
  if (session.chainCount >= MAX_CHAINS_PER_SESSION) {
    throw new LimitError(
      "messages",
      `session "${session.id}" holds ${session.chainCount} chains, the most a session may hold; this request would start another`,
    );
  }
  const replaced = plan.replaces ? snapshot.chains.get(plan.replaces) ?? null : null;
  const versionstamp = await registerChain(deps.kv, {
    session: { record: session, versionstamp: read.sessionVersionstamp },
    next: {
      ...session,
      chainCount: session.chainCount + 1,
      mainChain: plan.becomesMain ? plan.chainId : session.mainChain,
    },
    header,
    agentId: input.agent.id,
    retire: replaced
      ? {
        header: plan.retireAs === "side"
          ? { ...replaced.header, role: "side", updatedAt: now }
          : { ...replaced.header, wipedAt: now, updatedAt: now },
        versionstamp: replaced.versionstamp,
      }
      : null,
    metrics: deps.metrics,
  });
  if (versionstamp === null) return null;
  return {
    ...planned,
    chain: { key, value: header, versionstamp },
    ...(replaced && plan.retireAs === "wiped" ? { retired: replaced.header.id } : {}),
  };
}

/** A chain's first turn: the whole conversation rendered. */
async function wholePrompt<Reply>(
  deps: RouteDeps,
  input: TurnInput<Reply>,
  plan: ExtendPlan | RegisterPlan,
  chainId: string,
  chain: Deno.KvEntryMaybe<ChainHeader>,
  base: ChainBase,
  limits: RouteLimits,
): Promise<RoutedTurn> {
  const whole = input.prompt();
  const { messages: shown, images } = takeImageData(whole.messages);
  const prompt = { ...whole, messages: shown };
  const rendered = await encoded(
    0,
    limits,
    (options) => deps.encoder.renderPrompt(prompt, options),
  );
  const added = turnImages(images, rendered, 0, 0);
  return {
    kind: plan.kind,
    sessionId: input.sessionId,
    chainId,
    chain,
    base,
    requestDigest: plan.requestDigest,
    bodyDigest: plan.bodyDigest,
    replay: null,
    prompt: PromptIds.from(rendered.tokens, rendered.ascii),
    delta: rendered.tokens,
    promptImages: added,
    images: added,
    imageData: imageData(images),
    startsInReasoning: opensReasoning(rendered.text),
    tools: input.toolNames,
    messages: { messages: prompt.messages, tools: prompt.tools },
    recordMessages: false,
  };
}

/**
 * A later turn: the chain's kept tokens plus the messages from `plan.from` rendered, with a note
 * on how the request's tools differ from `known`, those the kept tokens told the model of.
 */
async function delta<Reply>(
  deps: RouteDeps,
  input: TurnInput<Reply>,
  plan: ExtendPlan,
  chain: Deno.KvEntryMaybe<ChainHeader>,
  history: ChainHistory,
  base: ChainBase,
  known: readonly string[],
  limits: RouteLimits,
): Promise<RoutedTurn> {
  const header = chain.value!;
  const { messages, images } = takeImageData(input.lower(plan.from, known));
  const rendered = await encoded(
    history.prompt.length,
    limits,
    (options) => deps.encoder.renderDelta(messages, input.enableThinking, options),
  );
  const kept = history.prompt;
  const tokens = deltaAfter(kept.last(), rendered.tokens, deps.tokenizer.ending.stopIds);
  const added = turnImages(images, rendered, kept.length, rendered.tokens.length - tokens.length);
  return {
    kind: plan.kind,
    sessionId: input.sessionId,
    chainId: header.id,
    chain,
    base,
    requestDigest: plan.requestDigest,
    bodyDigest: plan.bodyDigest,
    replay: null,
    // The worker's digits are those of the whole delta, not of one less its first token.
    prompt: kept.concat(tokens, tokens === rendered.tokens ? rendered.ascii : undefined),
    delta: tokens,
    promptImages: added.length > 0 ? [...history.images, ...added] : history.images,
    images: added,
    imageData: imageData(images),
    startsInReasoning: opensReasoning(rendered.text),
    tools: input.toolNames,
    messages: { messages },
    recordMessages: false,
  };
}

/**
 * New text encoded after `kept` tokens: stopped as soon as its tokens pass what the context can
 * still take (one token of slack: a prompt must leave one for output, but a delta may lose its
 * first token, `deltaAfter`; `fits` judges exactly), which is then a
 * {@linkcode ContextOverflowError} that knows only a lower bound.
 */
async function encoded(
  kept: number,
  limits: RouteLimits,
  encode: (options: { maxTokens: number; signal?: AbortSignal }) => Promise<Rendered>,
): Promise<Rendered> {
  try {
    return await encode({ maxTokens: limits.contextLength - kept, signal: limits.signal });
  } catch (error) {
    if (!(error instanceof OverBudgetError)) throw error;
    // The prompt has at least this many tokens: those counted, less the one a delta may lose.
    const atLeast = kept + error.tokens - (kept > 0 ? 1 : 0);
    throw new ContextOverflowError(atLeast - 1, limits.contextLength, true);
  }
}

/** A chain's kept tokens and the images among them. */
interface ChainHistory {
  readonly prompt: PromptIds;
  readonly images: readonly TurnImage[];
}

/** The chain's tokens from this process's cache, when it holds this version. */
function cacheHit(deps: RouteDeps, chain: RouteChain): ChainHistory | null {
  const cached = deps.cache.get(cacheKey(chain.header), chain.versionstamp);
  return cached ? { prompt: cached.prompt, images: cached.images ?? [] } : null;
}

/** The chain's tokens, read from KV once (when this process has not cached this version). */
async function readChainPrompt(deps: RouteDeps, chain: RouteChain): Promise<ChainHistory> {
  const header = chain.header;
  const turns = chain.turns ?? await readLiveTurns(deps.kv, header);
  const history = await readTurnsPrompt(deps, header, turns);
  deps.cache.put(cacheKey(header), chain.versionstamp, {
    header,
    prompt: history.prompt,
    ...(history.images.length > 0 ? { images: history.images } : {}),
    conversation: null,
  });
  return history;
}

/** The tokens of the given turns, in order, and their images. */
async function readTurnsPrompt(
  deps: RouteDeps,
  header: ChainHeader,
  turns: readonly TurnRecord[],
): Promise<ChainHistory> {
  let prompt = PromptIds.from([]);
  const images: TurnImage[] = [];
  const tokens = await readChainTokens(deps.kv, header.sessionId, header.id, turns);
  turns.forEach((record, i) => {
    const turn = tokens[i];
    prompt = prompt.concat(turn.delta).concat(turn.output).concat(turn.closing);
    if (record.images) images.push(...record.images);
  });
  return { prompt, images };
}

/**
 * The delta's images as the chain records them: where `rendered` put each one's pads, counted
 * from `kept` tokens of history, less the `dropped` tokens its start lost (`deltaAfter`).
 */
function turnImages(
  images: readonly ChatImage[],
  rendered: Rendered,
  kept: number,
  dropped: number,
): TurnImage[] {
  const spans = rendered.images ?? [];
  return images.map((image, i) => ({
    digest: image.digest,
    mediaType: image.media_type,
    width: image.width,
    height: image.height,
    bytes: image.bytes,
    start: kept + spans[i].offset - dropped,
    length: spans[i].length,
  }));
}

/** The images' bytes by digest. */
function imageData(images: readonly ChatImage[]): ReadonlyMap<string, string> {
  const data = new Map<string, string>();
  for (const image of images) if (image.data !== undefined) data.set(image.digest, image.data);
  return data;
}
