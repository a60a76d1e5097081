/**
 * The stream of a family that reasons in `<think>` blocks, then answers in text and tool calls
 * (every family but gpt-oss): reasoning streams up to `</think>` or the first call, text up to the
 * next region of calls, and the calls of a region once it closes.
 *
 * @module
 */
import type { AnswerFormat, OutputOptions, ToolRegions } from "./family.ts";
import type { OutputStream } from "./output_blocks.ts";
import { BufferedStream, partialMarker, TrimmedText } from "./_text_stream.ts";

const THINK_START = "<think>";
const THINK_END = "</think>";

/**
 * A stream reading `<think>` reasoning (when `options.formats` names a reasoning parser), then an
 * answer written as `answer` says, as `reasonedOutput(answer).parse` reads the whole text.
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { TAGGED_CALLS } from "./family.ts";
 * import { streamReasoned } from "./reasoned_stream.ts";
 * import { parseToolCalls } from "./tool_parser.ts";
 * const formats = { toolCallParser: "qwen25", reasoningParser: "qwen3" };
 * const stream = streamReasoned({ startsInReasoning: true, tools: new Map(), formats }, {
 *   parseAnswer: (text, tools) => parseToolCalls(text, new Set(tools.keys())),
 *   regions: TAGGED_CALLS,
 *   callsStart: "<tool_call>",
 * });
 * assert.deepEqual([...stream.push("plan</think>\n\nDo"), ...stream.push("ne."), ...stream.end()], [
 *   { type: "thinking", index: 0, thinking: "plan" },
 *   { type: "text", index: 1, text: "Do" },
 *   { type: "text", index: 1, text: "ne." },
 * ]);
 * ```
 */
export function streamReasoned(options: OutputOptions, answer: AnswerFormat): OutputStream {
  return new ReasonedStream(options, answer);
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

  private readonly parser: string;

  constructor(
    private readonly options: OutputOptions,
    private readonly answerFormat: AnswerFormat,
  ) {
    super();
    this.regions = answerFormat.regions;
    this.toolStart = answerFormat.callsStart;
    this.parser = options.formats.toolCallParser;
    this.phase = options.formats.reasoningParser === null ? "answer" : "start";
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
    const parsed = this.answerFormat.parseAnswer(raw, this.options.tools, this.parser);
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
