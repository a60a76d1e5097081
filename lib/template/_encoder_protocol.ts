/**
 * The messages between the encoder pool and its workers (`_encoder_worker.ts`).
 *
 * @module
 */
import type { ChatMessage, ChatPrompt } from "../chat/mod.ts";
import type { TokenizerSource } from "../tokenizer/mod.ts";
import type { CacheStats } from "../cache/mod.ts";

/** Loads the tokenizer; answered `ready` or `failed`. */
export interface InitMessage {
  readonly type: "init";
  readonly source: TokenizerSource;
  /** An `Int32Array`'s buffer where the worker keeps the id of the job it works on, -1 for none. */
  readonly running: SharedArrayBuffer;
}

/** A prompt or a delta to render and encode. */
export type EncodeJob =
  & {
    readonly type: "job";
    readonly id: number;
    /** Most tokens the result may hold (`Infinity` for no bound). */
    readonly maxTokens: number;
    /**
     * A shared `Int32Array` of two slots: the pool sets the first to 1 when nobody waits any
     * more; the worker keeps the tokens it has counted in the second.
     */
    readonly cancel: SharedArrayBuffer;
  }
  & (
    | { readonly kind: "prompt"; readonly prompt: ChatPrompt }
    | {
      readonly kind: "delta";
      readonly messages: readonly ChatMessage[];
      readonly enableThinking: boolean | undefined;
    }
  );

/** What the pool sends a worker. */
export type EncoderMessage = InitMessage | EncodeJob;

/** What a worker answers. */
export type EncodeReply =
  | { readonly type: "ready" }
  | { readonly type: "failed"; readonly message: string }
  | {
    readonly type: "done";
    readonly id: number;
    readonly text: string;
    readonly tokens: Uint32Array;
    /** The tokens' digits as the engine's body writes them (`Rendered.ascii`). */
    readonly ascii: Uint8Array;
    /** Where each image's pads are (`Rendered.images`). */
    readonly images?: readonly { readonly offset: number; readonly length: number }[];
    /** The worker's section cache after the job (for `/metrics`). */
    readonly sections?: CacheStats;
  }
  | { readonly type: "over"; readonly id: number; readonly tokens: number; readonly budget: number }
  | { readonly type: "cancelled"; readonly id: number }
  | {
    readonly type: "error";
    readonly id: number;
    readonly name: string;
    readonly message: string;
    /** The field a `LimitError` names. */
    readonly field?: string;
  };
