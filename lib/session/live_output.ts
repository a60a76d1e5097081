/**
 * A turn's output parsed while it is sampled (T6, streamed): token ids in, block events out,
 * adding up to what {@linkcode parseTurnOutput} makes of the whole output. The text fed to the
 * parser is held back where the whole output's text could still differ: a stop token (the parse
 * drops it when it ends the output), the tail a stop string could start in (the parse cuts at the
 * string), and a partial character.
 *
 * @module
 */
import {
  type OutputEvent,
  type OutputStream,
  streamOutput,
  type ToolSchemas,
} from "../output/mod.ts";
import { type ChatTokenizer, DecodeStream } from "../tokenizer/mod.ts";

/** What the live parse needs of the turn. */
export interface LiveOutputOptions {
  readonly startsInReasoning: boolean;
  readonly tools: ToolSchemas;
  /** The request's stop strings. */
  readonly stop: readonly string[];
}

/** Parses a turn's output as its tokens arrive. */
export class LiveOutput {
  readonly #stopIds: ReadonlySet<number>;
  readonly #decoder: DecodeStream;
  readonly #parser: OutputStream;
  readonly #stop: readonly string[];
  /** Characters a stop string may have begun in: one less than the longest. */
  readonly #stopTail: number;
  /** A stop token not yet known to end the output. */
  #stopToken: number | null = null;
  /** Decoded text not yet fed to the parser. */
  #held = "";
  /** Text fed to the parser, in pieces. */
  readonly #fed: string[] = [];

  constructor(tokenizer: ChatTokenizer, options: LiveOutputOptions) {
    this.#stopIds = new Set(tokenizer.ending.stopIds);
    this.#decoder = new DecodeStream((ids) => tokenizer.decode(ids));
    this.#parser = streamOutput({
      startsInReasoning: options.startsInReasoning,
      tools: options.tools,
      formats: tokenizer.formats,
    });
    this.#stop = options.stop.filter((stop) => stop.length > 0);
    this.#stopTail = Math.max(0, ...this.#stop.map((stop) => stop.length - 1));
  }

  /** The events newly sampled `ids` settle. */
  push(ids: readonly number[]): OutputEvent[] {
    const text: string[] = [];
    let run: number[] = [];
    for (const id of ids) {
      if (this.#stopToken !== null) run.push(this.#stopToken);
      this.#stopToken = null;
      if (this.#stopIds.has(id)) {
        text.push(this.#decoder.push(run));
        run = [];
        this.#stopToken = id;
      } else run.push(id);
    }
    if (run.length > 0) text.push(this.#decoder.push(run));
    this.#held += text.join("");
    let cut = this.#held.length - this.#stopTail;
    // A stop string sampled whole ends the output where it starts.
    for (const stop of this.#stop) {
      const at = this.#held.indexOf(stop);
      if (at >= 0) cut = Math.min(cut, at);
    }
    if (cut <= 0) return [];
    const code = this.#held.charCodeAt(cut - 1);
    if (code >= 0xd800 && code <= 0xdbff) cut--; // never between the halves of a surrogate pair
    return this.#feed(this.#held.slice(0, cut), this.#held.slice(cut));
  }

  /**
   * The events the end settles, given `text`, the whole output's text as the reply is parsed
   * from (`turnText`). `exact` is false if what was already fed is not where `text` starts (the
   * decoder disagreed with decoding the whole): the client's stream then differs from the reply.
   */
  end(text: string): { events: OutputEvent[]; exact: boolean } {
    const fed = this.#fed.join("");
    const exact = text.startsWith(fed);
    const events = exact ? this.#parser.push(text.slice(fed.length)) : [];
    return { events: [...events, ...this.#parser.end()], exact };
  }

  #feed(text: string, held: string): OutputEvent[] {
    this.#held = held;
    if (text.length === 0) return [];
    this.#fed.push(text);
    return this.#parser.push(text);
  }
}
