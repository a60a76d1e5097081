/**
 * Building a turn's prompt (T2, T3): a chain's first prompt is the whole conversation rendered;
 * a later one is the chain's kept tokens — from this process's cache, else read from KV once —
 * followed by the delta of the new messages, rendered and encoded off the event loop and stopped
 * as soon as it cannot fit. Images keep their pad spans, counted in the whole prompt.
 *
 * @module
 */
import {
  type ChainHeader,
  type ChainRoutes,
  chainRoutes,
  deltaAfter,
  NO_ROUTES,
  type TurnImage,
  type TurnRecord,
} from "../chain/mod.ts";
import { type ChatImage, type ChatMessage, type ChatPrompt, takeImageData } from "../chat/mod.ts";
import { PromptIds } from "../engine/mod.ts";
import { opensReasoning, type Rendered } from "../template/mod.ts";
import { OverBudgetError } from "../tokenizer/mod.ts";
import { ContextOverflowError } from "./errors.ts";
import type { RouteChain } from "./route_types.ts";
import { cacheKey } from "./route_snapshot.ts";
import type { RouteDeps, RouteLimits, TurnPrompt } from "./routed_turn.ts";
import { readChainTokens, readLiveTurns } from "./turn_store.ts";

/** What building a prompt reads. */
export type PromptDeps = Pick<RouteDeps, "kv" | "cache" | "encoder" | "tokenizer">;

/** A chain's kept tokens, the images among them, and the routed experts they recorded. */
export interface ChainHistory {
  readonly prompt: PromptIds;
  readonly images: readonly TurnImage[];
  readonly routes: ChainRoutes;
}

/** A chain's first prompt: the whole conversation rendered. */
export async function wholePrompt(
  deps: PromptDeps,
  whole: ChatPrompt,
  limits: RouteLimits,
): Promise<TurnPrompt> {
  const { messages: shown, images } = takeImageData(whole.messages);
  const prompt = { ...whole, messages: shown };
  const rendered = await encoded(
    0,
    limits,
    (options) => deps.encoder.renderPrompt(prompt, options),
  );
  const added = turnImages(images, rendered, 0, 0);
  return {
    ids: PromptIds.from(rendered.tokens, rendered.ascii),
    delta: rendered.tokens,
    images: added,
    newImages: added,
    imageData: imageData(images),
    startsInReasoning: opensReasoning(rendered.text),
    messages: { messages: prompt.messages, tools: prompt.tools },
    routes: NO_ROUTES,
  };
}

/** A later turn's prompt: the chain's kept tokens, then the new messages (`lowered`) rendered. */
export async function deltaPrompt(
  deps: PromptDeps,
  history: ChainHistory,
  lowered: ChatMessage[],
  enableThinking: boolean | undefined,
  limits: RouteLimits,
): Promise<TurnPrompt> {
  const { messages, images } = takeImageData(lowered);
  const kept = history.prompt;
  const rendered = await encoded(
    kept.length,
    limits,
    (options) => deps.encoder.renderDelta(messages, enableThinking, options),
  );
  const tokens = deltaAfter(kept.last(), rendered.tokens, deps.tokenizer.ending.stopIds);
  const added = turnImages(images, rendered, kept.length, rendered.tokens.length - tokens.length);
  return {
    // The worker's digits are those of the whole delta, not of one less its first token.
    ids: kept.concat(tokens, tokens === rendered.tokens ? rendered.ascii : undefined),
    delta: tokens,
    images: added.length > 0 ? [...history.images, ...added] : history.images,
    newImages: added,
    imageData: imageData(images),
    startsInReasoning: opensReasoning(rendered.text),
    messages: { messages },
    routes: history.routes,
  };
}

/**
 * The tokens a chain keeps: all of it (`turns` null) from this process's cache when it holds
 * this version, else read from KV once and cached; or the given live turns' (a rewind's kept
 * part), read from KV.
 */
export async function chainHistory(
  deps: PromptDeps,
  chain: RouteChain,
  turns: readonly TurnRecord[] | null,
): Promise<ChainHistory> {
  const header = chain.header;
  if (turns !== null) return await readTurnsPrompt(deps, header, turns);
  const cached = deps.cache.get(cacheKey(header), chain.versionstamp);
  if (cached) {
    return {
      prompt: cached.prompt,
      images: cached.images ?? [],
      routes: cached.routes ?? NO_ROUTES,
    };
  }
  const history = await readTurnsPrompt(
    deps,
    header,
    chain.turns ?? await readLiveTurns(deps.kv, header),
  );
  deps.cache.put(cacheKey(header), chain.versionstamp, {
    header,
    prompt: history.prompt,
    ...(history.images.length > 0 ? { images: history.images } : {}),
    ...(history.routes.spans.length > 0 ? { routes: history.routes } : {}),
    conversation: null,
  });
  return history;
}

/**
 * New text encoded after `kept` tokens: stopped as soon as its tokens pass what the context can
 * still take (one token of slack: a prompt must leave one for output, but a delta may lose its
 * first token, `deltaAfter`; the route's fit judges exactly), which is then a
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

/** The tokens of the given turns, in order, and their images. */
async function readTurnsPrompt(
  deps: PromptDeps,
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
  return { prompt, images, routes: chainRoutes(turns) };
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
