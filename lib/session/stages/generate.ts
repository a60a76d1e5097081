/**
 * The generate stage: the prompt goes to the engine (its images with it), and when the caller
 * streams, the output is parsed as it is sampled and fed on (T6). The request carries what
 * placement needs: the session as the routing key, the chain, the chain it is placed near (a
 * sub-agent's parent) and the turn its prompt extends.
 *
 * @module
 */
import { chainRef } from "../../chain/mod.ts";
import type {
  Engine,
  EngineImage,
  Generation,
  MoeShape,
  SamplingParams,
} from "../../engine/mod.ts";
import type { ChatTokenizer } from "../../tokenizer/mod.ts";
import type { ImageBytes } from "../image_bytes.ts";
import { LiveOutput } from "../live_output.ts";
import type { OutputFeed } from "../output_feed.ts";
import type { EarlySettle } from "./settle_output.ts";
import type { ChainRoute } from "../routed_turn.ts";
import type { TurnInput } from "../turn_input.ts";

/** What generating reads. */
export interface GenerateDeps {
  readonly engine: Engine;
  readonly tokenizer: ChatTokenizer;
  /** Bytes of images seen in turns, for the engine calls of later turns. */
  readonly imageBytes?: ImageBytes;
  /** The served model's MoE shape when its routed experts are recorded (`ROUTED_EXPERTS`). */
  readonly moe?: MoeShape;
}

/** A turn about to be generated. */
export interface TurnToGenerate<Reply> {
  readonly input: TurnInput<Reply>;
  readonly route: ChainRoute;
  readonly rid: string;
  readonly sampling: SamplingParams;
}

/** What the engine sampled, and the live parse of it when the turn streamed. */
export interface Generated {
  readonly generation: Generation;
  readonly live: LiveOutput | null;
}

/**
 * Generates the turn's output. With a `feed`, the output's events are fed on as sampled; with
 * `early`, it is settled there when the engine has answered and its routed experts are still
 * being read.
 *
 * @throws the engine's errors, and the signal's reason once it aborts.
 */
export async function generateOutput<Reply>(
  deps: GenerateDeps,
  turn: TurnToGenerate<Reply>,
  feed: OutputFeed | null,
  signal?: AbortSignal,
  early?: EarlySettle,
): Promise<Generated> {
  const { input, route } = turn;
  const { sessionId } = route;
  const live = feed
    ? new LiveOutput(deps.tokenizer, {
      startsInReasoning: route.prompt.startsInReasoning,
      tools: input.toolSchemas,
      stop: turn.sampling.stop ?? [],
    })
    : null;
  const images = route.prompt.images.length > 0 ? engineImages(deps, input, route) : null;
  const generation = await deps.engine.generate({
    rid: turn.rid,
    inputIds: route.prompt.ids,
    ...(images ? { images } : {}),
    sampling: turn.sampling,
    ...(input.tokenData?.topLogprobs ? { topLogprobs: input.tokenData.topLogprobs } : {}),
    signal,
    ...(feed && live ? { onTokens: (tokens) => feed.push(live.push(tokens.ids)) } : {}),
    // Settled while its routed experts are still being read.
    ...(early ? { onAnswered: (generation) => early.tell(generation) } : {}),
    // Only the rows the chain has not recorded; all of them where the prefix is recomputed on
    // purpose (a rewind: the engine may compute it again), to be checked against the record.
    ...(deps.moe
      ? {
        routes: {
          recorded: route.prompt.routes.recorded,
          verify: route.kind === "rewind" || route.kind === "realign",
        },
      }
      : {}),
    // A session's chains share their system prompt and tools, and a sub-agent its parent's
    // context: one key keeps them on the worker that has those cached.
    routingKey: sessionId,
    chain: {
      id: chainRef(sessionId, route.chainId),
      near: route.chain.value?.parent ? chainRef(sessionId, route.chain.value.parent) : null,
      // Only a prompt that extends the chain's last turn as it was may continue its engine session.
      after: route.kind === "append" ? route.base.lastRid : null,
    },
  });
  signal?.throwIfAborted();
  return { generation, live };
}

/**
 * Every image of the turn's prompt, in order, with its bytes: the delta's from the request as
 * lowered, the history's from this process's memory of them, else found in the request by digest
 * (it holds them all: its history matched the chain's). The delta's are remembered.
 *
 * @throws {Error} when the request does not hold an image its chain does, which routing rules out.
 */
function engineImages<Reply>(
  deps: GenerateDeps,
  input: TurnInput<Reply>,
  route: ChainRoute,
): EngineImage[] {
  const { imageData, images } = route.prompt;
  for (const [digest, data] of imageData) deps.imageBytes?.remember(digest, data);
  return images.map((image) => {
    const data = imageData.get(image.digest) ?? deps.imageBytes?.get(image.digest) ??
      input.imageData?.(image.digest);
    if (data === undefined) {
      throw new Error(`The request does not hold image ${image.digest} of its chain's prompt`);
    }
    deps.imageBytes?.remember(image.digest, data);
    return { mediaType: image.mediaType, data };
  });
}
