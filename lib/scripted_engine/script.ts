/**
 * What a scripted engine is told to answer: the calls it receives, the replies a script chooses
 * for them, and the faults it can play instead of answering.
 *
 * @module
 */

/**
 * How scripted text becomes the tokens the engine samples: `tokenizer` as the tokenizer encodes
 * it (canonical); `characters` as a real model often samples it — each character of ordinary text
 * its own token, a multi-byte character as its bytes' tokens ("hello" as h,e,l,l,o; an emoji as
 * four byte tokens) — with added tokens (`<think>`, `<tool_call>`, the end of turn) whole.
 */
export type Spelling = "tokenizer" | "characters";

/** A scripted reply: model text, or exact token ids (to script non-canonical tokenizations). */
export type Reply =
  | string
  | {
    readonly text?: string;
    readonly tokens?: readonly number[];
    /** How `text` is sampled, instead of the engine's spelling. */
    readonly spelling?: Spelling;
    /** Append the token that ends a turn (default true); `false` to script it in the text. */
    readonly eos?: boolean;
    /** Sleep per output token for this reply, instead of the engine's latency. */
    readonly latencyMs?: number;
  };

/** One `/generate` call as the engine received it. */
export interface EngineCall {
  readonly rid: string;
  /** The whole prompt (for an engine session's request, as the session built it). */
  readonly inputIds: number[];
  /** The ids the request carried, when an engine session built `inputIds` from them. */
  readonly sentIds?: number[];
  /** The engine session the request named (SGLang's `session_params.id`). */
  readonly session?: string;
  /** The images it was given (`image_data`), in order, as the model sees them. */
  readonly images?: readonly ScriptedImage[];
  readonly sampling: Record<string, unknown>;
  /** The request's prefix-cache namespace (vLLM's `cache_salt`), when it named one. */
  readonly cacheSalt?: string;
  /** The key a router would place the request by (its dialect's header), when it sent one. */
  readonly routingKey?: string;
  readonly receivedAt: number;
  /** The request body's length in bytes (its `content-length`). */
  readonly bodyBytes?: number;
  /** Prompt tokens its prefix cache served (the `cached_tokens` it reports). */
  cachedTokens?: number;
  /** The position it was asked routed experts from (R3), when it was asked. */
  routesFrom?: number;
  /** The routed experts it reported: rows from `start`, int32, `layers × topK` a row. */
  routes?: { readonly start: number; readonly values: Int32Array };
  /** The tokens answered, once the call finished. */
  output?: number[];
  /** When the call finished (`Date.now()`). */
  finishedAt?: number;
  /** When its first token was produced (`performance.now()`, this process's clock). */
  firstTokenAt?: number;
  /** Output tokens produced so far. */
  produced?: number;
}

/** An image a call was given: its identity, and its size and tokens as the model sees it. */
export interface ScriptedImage {
  readonly digest: string;
  readonly width: number;
  readonly height: number;
  readonly tokens: number;
}

/** Chooses the reply to a call; `promptText` decodes the prompt on demand. */
export type Script = (call: EngineCall, promptText: () => string) => Reply;

/** A failure the engine plays on the next call instead of answering. */
export type Fault =
  /** HTTP 503, as a starting or overloaded worker answers. */
  | { readonly kind: "unavailable" }
  /** HTTP 400 with SGLang's error body. */
  | { readonly kind: "reject"; readonly message: string }
  /** Abort after `after` tokens with `finish_reason.type = "abort"`, as a weight update does. */
  | { readonly kind: "abort"; readonly after: number; readonly weightVersion?: string }
  /**
   * No answer: the call runs until its client goes away (its own timeout) or `/abort_request`
   * names it, then ends as an abort with no tokens, as a stuck worker does.
   */
  | { readonly kind: "hang" }
  /**
   * The connection closes after `afterMs`, in the middle of the response body, as when a worker
   * or a router dies mid-generation: the client sees its connection fail.
   */
  | { readonly kind: "drop"; readonly afterMs: number }
  /** A slow worker: `latencyMs` per output token for this call, instead of the engine's. */
  | { readonly kind: "slow"; readonly latencyMs: number };

/** What the engine says when it has no script. */
export const DEFAULT_REPLY =
  "<think>\nNo script was given for this request.\n</think>\n\nThis is the built-in scripted engine, not a model. Set ENGINE_URL to serve a real engine (SGLang or vLLM).";

/** A script as given (a function, or replies used in order, then {@linkcode DEFAULT_REPLY}). */
export function toScript(script: Script | readonly Reply[]): Script {
  if (typeof script === "function") return script;
  const replies = [...script];
  return () => replies.shift() ?? DEFAULT_REPLY;
}
