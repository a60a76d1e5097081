/**
 * Reads gpt-oss output in OpenAI's harmony format (`gpt-oss` tool-call and reasoning parsers):
 * a sequence of messages, each `<|channel|>CHANNEL[ to=RECIPIENT][ <|constrain|>TYPE]<|message|>…`
 * ended by `<|end|>`, `<|call|>` or `<|return|>`, the later ones opened by `<|start|>assistant`
 * (the prompt's generation prompt opened the first). The recipient may also stand before the
 * channel (`<|start|>assistant to=functions.NAME<|channel|>commentary json<|message|>`), as the
 * chat template writes earlier calls.
 *
 * - `analysis` becomes thinking;
 * - a message to `functions.NAME` becomes a call of NAME with its JSON arguments;
 * - `commentary` without a recipient (a preamble) and `final` become text.
 *
 * As in SGLang, a message cut short (no end token: the output hit `max_tokens`) runs to the end
 * of the text. Unlike SGLang, text that is not a harmony message, and a call that cannot be used
 * (an unknown tool, a built-in recipient, arguments that are not a JSON object), stay text with
 * the reasons (T6) instead of being dropped; a call's name is what follows `functions.`, dots
 * included (SGLang keeps what follows the last dot).
 *
 * Both are read here, the whole text ({@linkcode parseHarmony}) and the text as it is sampled
 * ({@linkcode streamHarmony}): the gpt-oss family's output (`families/gpt_oss.ts`).
 *
 * @module
 */
import type { OutputBlock, OutputStream, ParsedOutput } from "./output_blocks.ts";
import { argumentsProblem } from "./tool_parser.ts";
import { BufferedStream, partialMarker, TrimmedText } from "./_text_stream.ts";

const START = "<|start|>";
const CHANNEL = "<|channel|>";
const MESSAGE = "<|message|>";
const CONSTRAIN = "<|constrain|>";
/** What ends a message: `<|end|>` inside a turn, `<|call|>` and `<|return|>` end the turn. */
const ENDS = ["<|end|>", "<|call|>", "<|return|>"];
const LONGEST_END = Math.max(...ENDS.map((end) => end.length));
const RECIPIENT = /(?:^|\s)to=([^\s<]+)/;
const FUNCTIONS = "functions.";

/** One harmony message as written: its header (role, channel, recipient) and its body. */
interface HarmonyMessage {
  readonly header: string;
  readonly body: string;
  /** The whole message's text, to keep as text when it cannot be used. */
  readonly raw: string;
}

/**
 * Parses harmony output text (the stop token that ended it already removed).
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { parseHarmony } from "./harmony_parser.ts";
 * const text = "<|channel|>analysis<|message|>List.<|end|>" +
 *   "<|start|>assistant<|channel|>commentary to=functions.Bash <|constrain|>json" +
 *   '<|message|>{"command": "ls"}';
 * assert.deepEqual(parseHarmony(text, new Set(["Bash"])), {
 *   blocks: [
 *     { type: "thinking", thinking: "List." },
 *     { type: "tool_call", name: "Bash", input: { command: "ls" } },
 *   ],
 *   illFormed: [],
 * });
 * ```
 */
export function parseHarmony(text: string, toolNames: ReadonlySet<string>): ParsedOutput {
  const blocks: OutputBlock[] = [];
  const illFormed: string[] = [];
  const keepText = (value: string) => {
    const trimmed = value.trim();
    if (trimmed.length > 0) blocks.push({ type: "text", text: trimmed });
  };
  const { messages, rest } = splitMessages(text);
  for (const message of messages) {
    const channel = channelOf(message.header);
    const recipient = RECIPIENT.exec(message.header.replace(CONSTRAIN, " "))?.[1] ?? null;
    if (recipient !== null) {
      const call = readCall(recipient, message.body, toolNames);
      if (typeof call === "string") {
        illFormed.push(call);
        keepText(message.raw);
      } else blocks.push(call);
    } else if (channel === "analysis") {
      if (message.body.length > 0) blocks.push({ type: "thinking", thinking: message.body });
    } else if (channel === "commentary" || channel === "final") {
      keepText(message.body);
    } else {
      illFormed.push(`harmony message on an unknown channel "${channel ?? ""}"`);
      keepText(message.raw);
    }
  }
  if (rest.length > 0) {
    illFormed.push("text outside a harmony message");
    keepText(rest);
  }
  return { blocks, illFormed };
}

/**
 * A stream reading harmony output as {@linkcode parseHarmony} reads the whole text: analysis and
 * the answer's messages stream as they come, a call or a message on an unknown channel is read
 * whole once it ends.
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { streamHarmony } from "./harmony_parser.ts";
 * const stream = streamHarmony(new Set(["Bash"]));
 * const events = [
 *   ...stream.push("<|channel|>analysis<|message|>Li"),
 *   ...stream.push("st.<|end|><|start|>assistant<|channel|>commentary to=functions.Bash"),
 *   ...stream.push(' <|constrain|>json<|message|>{"command": "ls"}'),
 *   ...stream.end(),
 * ];
 * assert.deepEqual(events, [
 *   { type: "thinking", index: 0, thinking: "Li" },
 *   { type: "thinking", index: 0, thinking: "st." },
 *   { type: "tool_call", index: 1, name: "Bash", input: { command: "ls" } },
 * ]);
 * ```
 */
export function streamHarmony(toolNames: ReadonlySet<string>): OutputStream {
  return new HarmonyStream(toolNames);
}

/**
 * The messages of `text`, in order, and what follows the last one that is not a message (text
 * where a `<|start|>` or a `<|message|>` should be).
 */
function splitMessages(text: string): { messages: HarmonyMessage[]; rest: string } {
  const messages: HarmonyMessage[] = [];
  let at = 0;
  while (at < text.length) {
    // The prompt opened the first message; a later one opens with `<|start|>assistant`, or, from
    // a model that leaves that out, straight with its channel.
    let headerStart = at;
    if (text.startsWith(START, at)) headerStart = at + START.length;
    else if (messages.length > 0 && !text.startsWith(CHANNEL, at)) break;
    const open = text.indexOf(MESSAGE, headerStart);
    const nextStart = text.indexOf(START, headerStart);
    if (open < 0 || (nextStart >= 0 && nextStart < open)) break;
    const bodyStart = open + MESSAGE.length;
    let end = text.length;
    let endLength = 0;
    for (const token of ENDS) {
      const found = text.indexOf(token, bodyStart);
      if (found >= 0 && found < end) [end, endLength] = [found, token.length];
    }
    messages.push({
      header: text.slice(headerStart, open),
      body: text.slice(bodyStart, end),
      raw: text.slice(at, end + endLength),
    });
    at = end + endLength;
  }
  return { messages, rest: text.slice(at) };
}

/** The channel a header names (`analysis`, `commentary`, `final`), or `null`. */
function channelOf(header: string): string | null {
  const at = header.indexOf(CHANNEL);
  if (at < 0) return null;
  return /^\s*([A-Za-z]+)/.exec(header.slice(at + CHANNEL.length))?.[1].toLowerCase() ?? null;
}

/** The call a message to `recipient` makes, or the reason it cannot be one. */
function readCall(
  recipient: string,
  body: string,
  toolNames: ReadonlySet<string>,
): OutputBlock | string {
  const name = recipient.startsWith(FUNCTIONS) ? recipient.slice(FUNCTIONS.length) : recipient;
  if (!toolNames.has(name)) return `tool call names an unknown tool "${recipient}"`;
  let input: unknown;
  try {
    input = JSON.parse(body);
  } catch {
    return `arguments of "${name}" are not a JSON object`;
  }
  if (typeof input !== "object" || input === null || Array.isArray(input)) {
    return `arguments of "${name}" are not a JSON object`;
  }
  const record = input as Record<string, unknown>;
  return argumentsProblem(name, record) ?? { type: "tool_call", name, input: record };
}

/** Harmony messages (gpt-oss), each its own block, as `parseHarmony` reads them. */
class HarmonyStream extends BufferedStream {
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

  constructor(private readonly toolNames: ReadonlySet<string>) {
    super();
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
    const recipient = RECIPIENT.exec(header.replace(CONSTRAIN, " "))?.[1];
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
