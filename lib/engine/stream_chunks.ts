/**
 * Reading SGLang's streamed `/generate` (reference sglang.md §1.4): the `data:` payloads of the
 * SSE body, and each chunk's newly sampled tokens whether the server streams cumulatively (the
 * default: every chunk repeats everything so far) or incrementally
 * (`--incremental-streaming-output`).
 *
 * @module
 */
import { sseEvents, SseEventTooLongError } from "./sse_data.ts";

/** One `/generate` answer, or one chunk of a streamed one, as far as the gateway reads it. */
export interface RawOutput {
  output_ids?: number[];
  meta_info?: {
    finish_reason?: { type: string; matched?: number | string | null; message?: string } | null;
    completion_tokens?: number;
    /** The prompt's length as the engine read it (an engine session builds it). */
    prompt_tokens?: number;
    /** Prompt tokens served from the prefix cache. */
    cached_tokens?: number;
    output_token_logprobs?: [number, number, unknown][];
    output_top_logprobs?: ([number, number, unknown][] | null)[];
    weight_version?: string;
    /** Newer SGLang: output spans sampled under each version (in-place weight updates). */
    weight_versions?: { version: string; start: number; end: number }[];
    e2e_latency?: number;
    /** The routed experts (R3), base64 of int32, on the answer or the last chunk. */
    routed_experts?: string | null;
  };
  /** A failure reported inside the stream. */
  error?: { message?: string };
}

/** Tokens an engine answer or chunk adds, aligned with their logprobs. */
export interface NewTokens {
  readonly ids: number[];
  /** `[logprob, id, text]` of each new token, as SGLang sends them. */
  readonly logprobs: [number, number, unknown][];
  readonly tops: ([number, number, unknown][] | null)[];
}

/** The stream is not what SGLang sends: the request cannot be trusted to have been recorded. */
export class StreamFormatError extends Error {
  constructor(message: string) {
    super(message);
    this.name = "StreamFormatError";
  }
}

/**
 * The `data:` payloads of an SSE body, `[DONE]` included, as the bytes arrive (`sse_data.ts`: the
 * specification's line ends, comments and events).
 *
 * @throws {StreamFormatError} past `maxEventBytes` in one event (a runaway body).
 */
export async function* sseData(
  body: AsyncIterable<Uint8Array>,
  maxEventBytes = 256 * 1024 * 1024,
): AsyncGenerator<string> {
  try {
    yield* sseEvents(body, maxEventBytes);
  } catch (error) {
    if (error instanceof SseEventTooLongError) throw new StreamFormatError(error.message);
    throw error;
  }
}

/**
 * Tells each chunk's new tokens from what earlier chunks of the same call sent, by
 * `meta_info.completion_tokens` (the call's whole count so far): a chunk holding that many ids
 * is cumulative, one holding the difference is incremental. An abort chunk fitting neither is
 * SGLang's waiting-queue quirk (`[last_id]` or `[]`) and adds nothing.
 */
export class ChunkReader {
  /** Tokens of the call so far. */
  #have = 0;

  /**
   * The tokens `chunk` adds.
   *
   * @throws {StreamFormatError} when its ids fit neither form, or its logprobs do not match its
   * ids.
   */
  next(chunk: RawOutput): NewTokens {
    const ids = chunk.output_ids ?? [];
    const total = chunk.meta_info?.completion_tokens;
    let from: number;
    if (total === undefined) {
      throw new StreamFormatError("Engine stream chunk has no meta_info.completion_tokens");
    } else if (ids.length === total && total >= this.#have) {
      from = this.#have; // cumulative
    } else if (ids.length === total - this.#have) {
      from = 0; // incremental
    } else if (chunk.meta_info?.finish_reason?.type === "abort") {
      return { ids: [], logprobs: [], tops: [] };
    } else {
      throw new StreamFormatError(
        `Engine stream chunk has ${ids.length} output_ids for ${total} completion tokens after ${this.#have}`,
      );
    }
    const added = newTokens(chunk, from);
    this.#have += added.ids.length;
    return added;
  }
}

/**
 * The tokens of `chunk` from output position `from` on, with their logprobs (and top logprobs,
 * when sent).
 *
 * @throws {StreamFormatError} when the logprobs do not match the ids.
 */
export function newTokens(chunk: RawOutput, from = 0): NewTokens {
  const all = chunk.output_ids ?? [];
  const lps = chunk.meta_info?.output_token_logprobs ?? [];
  const tops = chunk.meta_info?.output_top_logprobs ?? [];
  const ids = all.slice(from);
  const logprobs = lps.length === all.length ? lps.slice(from) : [];
  if (logprobs.length !== ids.length || logprobs.some((lp, i) => lp[1] !== ids[i])) {
    throw new StreamFormatError(
      "Engine returned output_token_logprobs that do not match output_ids",
    );
  }
  return { ids, logprobs, tops: tops.length === all.length ? tops.slice(from) : [] };
}
