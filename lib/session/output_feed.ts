/**
 * A turn's output events on their way to its stream: kept until the stream listens (the turn
 * may sample before the handler has built its response), then handed over as they come.
 *
 * @module
 */
import type { OutputEvent } from "../output/mod.ts";

/** The output events of one turn under way. */
export class OutputFeed {
  #buffer: OutputEvent[] = [];
  #listener: ((events: OutputEvent[]) => void) | null = null;
  readonly #sampling = Promise.withResolvers<void>();

  /** Resolves once the engine has sampled the turn's first tokens. */
  get sampling(): Promise<void> {
    return this.#sampling.promise;
  }

  /** Tokens were sampled; `events` are what they settled (maybe none yet). */
  push(events: readonly OutputEvent[]): void {
    this.#sampling.resolve();
    if (events.length === 0) return;
    if (this.#listener) this.#listener([...events]);
    else this.#buffer.push(...events);
  }

  /** Hands `listener` the events so far, then each later push. */
  listen(listener: (events: OutputEvent[]) => void): void {
    const held = this.#buffer;
    this.#buffer = [];
    this.#listener = listener;
    if (held.length > 0) listener(held);
  }
}
