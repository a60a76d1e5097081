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
 * @module
 */
import type { OutputBlock, ParsedOutput } from "./output_blocks.ts";
import { argumentsProblem } from "./tool_parser.ts";

const START = "<|start|>";
const CHANNEL = "<|channel|>";
const MESSAGE = "<|message|>";
const CONSTRAIN = "<|constrain|>";
/** What ends a message: `<|end|>` inside a turn, `<|call|>` and `<|return|>` end the turn. */
const ENDS = ["<|end|>", "<|call|>", "<|return|>"];
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
