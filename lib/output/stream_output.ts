/**
 * Output parsed as it is sampled: text chunks in, block deltas out, so an agent reads thinking and
 * text while the model writes them (T6, streamed).
 *
 * What is streamed always adds up to what {@linkcode parseOutput} makes of the whole text, for
 * any way the text is cut into chunks: a delta is sent only once no later text can change it.
 * - Thinking and text stream as they come, less what may still turn out to be part of a marker
 *   (`</think>`, `<tool_call>`, `<|end|>`…) and whitespace a block may end with, which the parser
 *   trims.
 * - A tool call is sent whole when its closing marker arrives: a call that turns out ill-formed
 *   stays text (T6), and a call already sent cannot be taken back. Where SGLang streams a call's
 *   arguments piece by piece, the agent gets the same call in one piece; it cannot run half a call.
 *
 * Each event names its block by index in the parsed output's blocks; a block ends when a later
 * index appears, or at the end.
 *
 * @module
 */
import type { OutputFormat, ToolRegions } from "./family.ts";
import { modelFamily } from "./model_family.ts";
import type { OutputBlock } from "./output_blocks.ts";
import { type ParseOptions, QWEN3 } from "./parse_output.ts";
import { parseHarmony } from "./harmony_parser.ts";
import type { ToolSchemas } from "./qwen3_coder_parser.ts";

/** A piece of a parsed output, in order: to be appended to, or to become, block `index`. */
export type OutputEvent =
  | { readonly type: "thinking"; readonly index: number; readonly thinking: string }
  | { readonly type: "text"; readonly index: number; readonly text: string }
  | {
    readonly type: "tool_call";
    readonly index: number;
    readonly name: string;
    readonly input: Record<string, unknown>;
  };

/** Parses output as it arrives. */
export interface OutputStream {
  /** The events `chunk` settles. */
  push(chunk: string): OutputEvent[];
  /** The events the end of the output settles; the stream takes no more chunks. */
  end(): OutputEvent[];
}

/**
 * A stream parsing output as {@linkcode parseOutput} does with the same options.
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { streamOutput } from "./stream_output.ts";
 * const stream = streamOutput({ startsInReasoning: false, tools: new Map() });
 * const events = [
 *   ...stream.push("<think>\nlo"),
 *   ...stream.push("ok\n</think>\n\nDo"),
 *   ...stream.push("ne."),
 *   ...stream.end(),
 * ];
 * assert.deepEqual(events, [
 *   { type: "thinking", index: 0, thinking: "lo" },
 *   { type: "thinking", index: 0, thinking: "ok" },
 *   { type: "text", index: 1, text: "Do" },
 *   { type: "text", index: 1, text: "ne." },
 * ]);
 * ```
 */
export function streamOutput(options: ParseOptions): OutputStream {
  const formats = options.formats ?? QWEN3;
  const output = modelFamily(formats).output;
  // The one format of channels is harmony's.
  if (output.kind === "channels") return new HarmonyStream(options.tools);
  return new ReasonedStream(options, formats.toolCallParser, formats.reasoningParser, output);
}

/** The events of one output, numbered as blocks. */
class Blocks {
  readonly events: OutputEvent[] = [];
  private count = 0;

  /** A new block's index. */
  next(): number {
    return this.count++;
  }

  take(): OutputEvent[] {
    return this.events.splice(0);
  }
}

/**
 * A text block the parser trims: leading whitespace is dropped, trailing whitespace held until
 * more text follows it, and the block is numbered when its first text is sent.
 */
class TrimmedText {
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
function partialMarker(text: string, markers: readonly string[]): number {
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

const THINK_START = "<think>";
const THINK_END = "</think>";

/** Text not read yet, read as far as it settles on each chunk and at the end. */
abstract class BufferedStream implements OutputStream {
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

/** `<think>` reasoning (when the format has it), then text and tool calls. */
class ReasonedStream extends BufferedStream {
  private readonly text = new TrimmedText(this.blocks);
  private readonly regions: ToolRegions;
  private readonly toolStart: string;
  private phase: "start" | "reasoning" | "answer" | "region" | "plain";
  /** The reasoning block's index once it has text; newlines are held as for text's whitespace. */
  private thinking = -1;
  private heldNewlines = "";
  /** How much of the buffer a region's closing marker was already looked for in. */
  private scanned = 0;

  constructor(
    private readonly options: ParseOptions,
    private readonly parser: string,
    reasoningParser: string | null,
    private readonly output: Extract<OutputFormat, { kind: "reasoned" }>,
  ) {
    super();
    this.regions = output.regions;
    this.toolStart = output.callsStart;
    this.phase = reasoningParser === null ? "answer" : "start";
  }

  protected drain(final: boolean): void {
    // Each step reads what it can; stop once a round changes nothing.
    for (;;) {
      const [phase, left] = [this.phase, this.buffer.length];
      if (this.phase === "start") this.start(final);
      if (this.phase === "reasoning") this.reason(final);
      if (this.phase === "answer") this.answer(final);
      if (this.phase === "region") this.region(final);
      if (this.phase === "plain") {
        this.text.add(this.buffer);
        this.buffer = "";
      }
      if (this.phase === phase && this.buffer.length === left) return;
    }
  }

  /** Decides whether the output opens with `<think>` (after whitespace). */
  private start(final: boolean): void {
    const lead = this.buffer.length - this.buffer.trimStart().length;
    const head = this.buffer.slice(lead);
    if (!final && THINK_START.startsWith(head)) return; // all whitespace, or `<thi`
    if (head.startsWith(THINK_START)) {
      this.buffer = this.buffer.slice(lead + THINK_START.length);
      this.phase = "reasoning";
    } else this.phase = this.options.startsInReasoning ? "reasoning" : "answer";
  }

  /** Streams reasoning up to `</think>` or the format's first tool call. */
  private reason(final: boolean): void {
    const close = this.buffer.indexOf(THINK_END);
    const tool = this.buffer.indexOf(this.toolStart);
    if (close >= 0 && (tool < 0 || close < tool)) {
      this.think(this.buffer.slice(0, close), true);
      this.buffer = this.buffer.slice(close + THINK_END.length);
      this.phase = "answer";
    } else if (tool >= 0) {
      this.think(this.buffer.slice(0, tool), true);
      this.buffer = this.buffer.slice(tool);
      this.phase = "answer";
    } else if (final) {
      this.think(this.buffer, true);
      this.buffer = "";
    } else {
      const keep = partialMarker(this.buffer, [THINK_END, this.toolStart]);
      this.think(this.buffer.slice(0, this.buffer.length - keep), false);
      this.buffer = this.buffer.slice(this.buffer.length - keep);
    }
  }

  /** Reasoning text; newlines at its edges are trimmed, as the parser trims them. */
  private think(text: string, last: boolean): void {
    // Newlines are held only after text was sent, so before it they lead the block: dropped.
    let value = this.thinking < 0 ? text.replace(/^\n+/, "") : this.heldNewlines + text;
    const tail = /\n+$/.exec(value);
    this.heldNewlines = last || !tail ? "" : tail[0];
    if (tail) value = value.slice(0, value.length - tail[0].length);
    if (value.length === 0) return;
    if (this.thinking < 0) this.thinking = this.blocks.next();
    this.blocks.events.push({ type: "thinking", index: this.thinking, thinking: value });
  }

  /** Streams text up to the next region of calls. */
  private answer(final: boolean): void {
    const open = this.buffer.indexOf(this.regions.open);
    if (open >= 0) {
      this.text.add(this.buffer.slice(0, open));
      this.buffer = this.buffer.slice(open);
      this.phase = "region";
      return;
    }
    const keep = final ? 0 : partialMarker(this.buffer, [this.regions.open]);
    this.text.add(this.buffer.slice(0, this.buffer.length - keep));
    this.buffer = this.buffer.slice(this.buffer.length - keep);
  }

  /** Holds a region until it closes, then sends its calls, or its text when it cannot be used. */
  private region(final: boolean): void {
    const { open, close: closing, once } = this.regions;
    // Only the text since the last look can hold the closing marker: a long call costs one pass.
    const from = Math.max(open.length, this.scanned - closing.length + 1);
    const close = this.buffer.indexOf(closing, from);
    if (close < 0) {
      this.scanned = this.buffer.length;
      if (final) {
        // Never closed: text, like everything after it.
        this.text.add(this.buffer);
        this.buffer = "";
      }
      return;
    }
    this.scanned = 0;
    const raw = this.buffer.slice(0, close + closing.length);
    this.buffer = this.buffer.slice(raw.length);
    const parsed = this.output.parseAnswer(raw, this.options.tools, this.parser);
    const calls = parsed.illFormed.length === 0 &&
      parsed.parts.every((part) => part.type === "tool_call");
    if (calls) {
      this.text.close();
      for (const part of parsed.parts) {
        if (part.type === "tool_call") {
          this.blocks.events.push({ ...part, index: this.blocks.next() });
        }
      }
    } else this.text.add(raw);
    // A section format reads one section; after a bad one the whole answer is text.
    this.phase = once ? "plain" : "answer";
  }
}

const START = "<|start|>";
const CHANNEL = "<|channel|>";
const MESSAGE = "<|message|>";
const ENDS = ["<|end|>", "<|call|>", "<|return|>"];
const LONGEST_END = Math.max(...ENDS.map((end) => end.length));

/** Harmony messages (gpt-oss), each its own block, as `parseHarmony` reads them. */
class HarmonyStream extends BufferedStream {
  private readonly toolNames: ReadonlySet<string>;
  private messages = 0;
  /** The message being read, once its header is known. */
  private current: {
    readonly raw: string;
    readonly kind: "thinking" | "text" | "whole";
    thinking: number;
    readonly text: TrimmedText;
  } | null = null;
  /** Text outside a message: everything from there on is one text block. */
  private rest: TrimmedText | null = null;
  /** How much of the buffer the current message's end was already looked for in. */
  private scanned = 0;

  constructor(tools: ToolSchemas) {
    super();
    this.toolNames = new Set(tools.keys());
  }

  protected drain(final: boolean): void {
    for (;;) {
      if (this.rest) {
        this.rest.add(this.buffer);
        this.buffer = "";
        return;
      }
      if (this.current ? !this.body(final) : !this.header(final)) return;
    }
  }

  /** Reads a message's header once `<|message|>` arrives; false when it must wait. */
  private header(final: boolean): boolean {
    if (this.buffer.length === 0) return false;
    let headerStart = 0;
    if (this.buffer.startsWith(START)) headerStart = START.length;
    else if (this.messages > 0 && !this.buffer.startsWith(CHANNEL)) {
      if (!final && (START.startsWith(this.buffer) || CHANNEL.startsWith(this.buffer))) {
        return false;
      }
      return this.toRest();
    }
    const open = this.buffer.indexOf(MESSAGE, headerStart);
    const nextStart = this.buffer.indexOf(START, headerStart);
    if (nextStart >= 0 && (open < 0 || nextStart < open)) return this.toRest();
    if (open < 0) return final ? this.toRest() : false;
    const header = this.buffer.slice(headerStart, open);
    const raw = this.buffer.slice(0, open + MESSAGE.length);
    this.buffer = this.buffer.slice(raw.length);
    this.messages++;
    // A call, or a message on an unknown channel, is parsed whole once it ends.
    const channel = channelOf(header);
    const recipient = /(?:^|\s)to=([^\s<]+)/.exec(header.replace("<|constrain|>", " "))?.[1];
    const kind = recipient !== undefined
      ? "whole"
      : channel === "analysis"
      ? "thinking"
      : channel === "commentary" || channel === "final"
      ? "text"
      : "whole";
    this.current = { raw, kind, thinking: -1, text: new TrimmedText(this.blocks) };
    return true;
  }

  /** Streams a message's body up to its end token; false when it must wait. */
  private body(final: boolean): boolean {
    const message = this.current!;
    let end = -1;
    let endLength = 0;
    // A message held whole is looked through once: only new text can hold its end.
    const whole = message.kind === "whole";
    const from = whole ? Math.max(0, this.scanned - LONGEST_END + 1) : 0;
    for (const token of ENDS) {
      const found = this.buffer.indexOf(token, from);
      if (found >= 0 && (end < 0 || found < end)) [end, endLength] = [found, token.length];
    }
    this.scanned = end < 0 && whole ? this.buffer.length : 0;
    if (end < 0 && !final) {
      if (whole) return false;
      const keep = partialMarker(this.buffer, ENDS);
      this.stream(message, this.buffer.slice(0, this.buffer.length - keep));
      this.buffer = this.buffer.slice(this.buffer.length - keep);
      return false;
    }
    const bodyEnd = end < 0 ? this.buffer.length : end;
    const read = this.buffer.slice(0, bodyEnd + endLength);
    if (whole) {
      for (const block of parseHarmony(message.raw + read, this.toolNames).blocks) {
        this.emit(block);
      }
    } else this.stream(message, this.buffer.slice(0, bodyEnd));
    this.buffer = this.buffer.slice(read.length);
    this.current = null;
    return true;
  }

  private stream(message: NonNullable<HarmonyStream["current"]>, text: string): void {
    if (text.length === 0) return;
    if (message.kind === "text") message.text.add(text);
    else if (message.kind === "thinking") {
      if (message.thinking < 0) message.thinking = this.blocks.next();
      this.blocks.events.push({ type: "thinking", index: message.thinking, thinking: text });
    }
  }

  private emit(block: OutputBlock): void {
    const index = this.blocks.next();
    this.blocks.events.push(
      block.type === "thinking"
        ? { type: "thinking", index, thinking: block.thinking }
        : block.type === "text"
        ? { type: "text", index, text: block.text }
        : { ...block, index },
    );
  }

  private toRest(): boolean {
    this.rest = new TrimmedText(this.blocks);
    return true;
  }
}

/** The channel a header names, as `parseHarmony` reads it. */
function channelOf(header: string): string | null {
  const at = header.indexOf(CHANNEL);
  if (at < 0) return null;
  return /^\s*([A-Za-z]+)/.exec(header.slice(at + CHANNEL.length))?.[1].toLowerCase() ?? null;
}
