/**
 * What every family's output stream is made of: text read as far as it settles on each chunk, the
 * events numbered as blocks, text blocks trimmed as the parsers trim them, and the markers a
 * chunk's end may be the start of.
 *
 * @module
 */
import type { OutputEvent, OutputStream } from "./output_blocks.ts";

/** The events of one output, numbered as blocks. */
export class Blocks {
  readonly events: OutputEvent[] = [];
  private count = 0;

  /** A new block's index. */
  next(): number {
    return this.count++;
  }

  /** The events since the last take, handed over. */
  take(): OutputEvent[] {
    return this.events.splice(0);
  }
}

/**
 * A text block the parser trims: leading whitespace is dropped, trailing whitespace held until
 * more text follows it, and the block is numbered when its first text is sent.
 */
export class TrimmedText {
  private index = -1;
  private held = "";

  constructor(private readonly blocks: Blocks) {}

  add(text: string): void {
    let value = this.index < 0 ? text.replace(/^\s+/, "") : this.held + text;
    const tail = /\s+$/.exec(value);
    this.held = tail ? tail[0] : "";
    value = value.slice(0, value.length - this.held.length);
    if (value.length === 0) return;
    if (this.index < 0) this.index = this.blocks.next();
    this.blocks.events.push({ type: "text", index: this.index, text: value });
  }

  /** Ends the block: held whitespace is trimmed away; later text starts a new block. */
  close(): void {
    this.index = -1;
    this.held = "";
  }
}

/** How much of `text`'s end may be the start of one of `markers`, still to be decided. */
export function partialMarker(text: string, markers: readonly string[]): number {
  let longest = 0;
  for (const marker of markers) {
    for (let n = Math.min(marker.length - 1, text.length); n > longest; n--) {
      if (text.endsWith(marker.slice(0, n))) {
        longest = n;
        break;
      }
    }
  }
  return longest;
}

/** Text not read yet, read as far as it settles on each chunk and at the end. */
export abstract class BufferedStream implements OutputStream {
  protected readonly blocks = new Blocks();
  protected buffer = "";

  push(chunk: string): OutputEvent[] {
    this.buffer += chunk;
    this.drain(false);
    return this.blocks.take();
  }

  end(): OutputEvent[] {
    this.drain(true);
    return this.blocks.take();
  }

  /** Reads what the buffer settles; `final`: no more text will come. */
  protected abstract drain(final: boolean): void;
}
