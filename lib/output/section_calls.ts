/**
 * Tool calls written as a section of marker tokens, each call a name and JSON arguments, as
 * SGLang's detectors read them:
 *
 * - `deepseekv31` (DeepSeek-V3.1): `<｜tool▁calls▁begin｜><｜tool▁call▁begin｜>NAME<｜tool▁sep｜>{json}<｜tool▁call▁end｜>…<｜tool▁calls▁end｜>`
 * - `kimi_k2` (Kimi K2): `<|tool_calls_section_begin|><|tool_call_begin|>functions.NAME:IDX<|tool_call_argument_begin|>{json}<|tool_call_end|>…<|tool_calls_section_end|>`
 *
 * Text before the section is kept (SGLang keeps it too); so is any after it. A section that does
 * not close, or holds a call that cannot be used (an unknown tool, arguments that are not a JSON
 * object), stays text with the reasons (T6).
 *
 * @module
 */
import { type AnswerPart, argumentsProblem, type ParsedAnswer } from "./tool_parser.ts";

/** The markers of one section format and how a call's header names its tool. */
interface SectionFormat {
  readonly begin: string;
  readonly end: string;
  readonly callBegin: string;
  readonly callEnd: string;
  /** Between a call's header and its JSON arguments. */
  readonly separator: string;
  /** The tool a call's header names, or `null` when the header is not one this format writes. */
  name(header: string): string | null;
}

const DEEPSEEK_V31: SectionFormat = {
  begin: "<｜tool▁calls▁begin｜>",
  end: "<｜tool▁calls▁end｜>",
  callBegin: "<｜tool▁call▁begin｜>",
  callEnd: "<｜tool▁call▁end｜>",
  separator: "<｜tool▁sep｜>",
  name: (header) => header.length > 0 ? header : null,
};

/** `functions.NAME:IDX` (or `NAME:IDX`), hyphens allowed, as SGLang's `tool_call_id_regex`. */
const KIMI_ID = /^(?:functions\.)?([\w.-]+):\d+$/;

/** What opens Kimi K2's section of calls; it also ends the model's reasoning. */
export const KIMI_K2_SECTION_BEGIN = "<|tool_calls_section_begin|>";

const KIMI_K2: SectionFormat = {
  begin: KIMI_K2_SECTION_BEGIN,
  end: "<|tool_calls_section_end|>",
  callBegin: "<|tool_call_begin|>",
  callEnd: "<|tool_call_end|>",
  separator: "<|tool_call_argument_begin|>",
  name: (header) => KIMI_ID.exec(header.trim())?.[1] ?? null,
};

/** DeepSeek-V3.1's tool calls in `text` (`deepseekv31`). */
export function parseDeepSeekV31Calls(text: string, toolNames: ReadonlySet<string>): ParsedAnswer {
  return parseSection(text, toolNames, DEEPSEEK_V31);
}

/** Kimi K2's tool calls in `text` (`kimi_k2`). */
export function parseKimiK2Calls(text: string, toolNames: ReadonlySet<string>): ParsedAnswer {
  return parseSection(text, toolNames, KIMI_K2);
}

function parseSection(
  text: string,
  toolNames: ReadonlySet<string>,
  format: SectionFormat,
): ParsedAnswer {
  const start = text.indexOf(format.begin);
  if (start < 0) return textOnly(text, []);
  const close = text.indexOf(format.end, start + format.begin.length);
  if (close < 0) return textOnly(text, ["tool calls section without its closing marker"]);
  const body = text.slice(start + format.begin.length, close);
  const calls: AnswerPart[] = [];
  const illFormed: string[] = [];
  let at = 0;
  while (at < body.length) {
    const open = body.indexOf(format.callBegin, at);
    if (open < 0) break;
    const end = body.indexOf(format.callEnd, open + format.callBegin.length);
    if (end < 0) {
      illFormed.push("tool call without its closing marker");
      break;
    }
    const call = readCall(body.slice(open + format.callBegin.length, end), toolNames, format);
    if (typeof call === "string") illFormed.push(call);
    else calls.push(call);
    at = end + format.callEnd.length;
  }
  if (calls.length === 0 && illFormed.length === 0) {
    illFormed.push("tool calls section holds no call");
  }
  if (illFormed.length > 0) return textOnly(text, illFormed);
  const before = text.slice(0, start).trim();
  const after = text.slice(close + format.end.length).trim();
  return {
    parts: [
      ...(before ? [{ type: "text" as const, text: before }] : []),
      ...calls,
      ...(after ? [{ type: "text" as const, text: after }] : []),
    ],
    illFormed: [],
  };
}

/** One call from its text between the call markers, or why it cannot be one. */
function readCall(
  raw: string,
  toolNames: ReadonlySet<string>,
  format: SectionFormat,
): AnswerPart | string {
  const cut = raw.indexOf(format.separator);
  if (cut < 0) return "tool call without arguments";
  const name = format.name(raw.slice(0, cut));
  if (name === null) return "tool call without a name";
  if (!toolNames.has(name)) return `tool call names an unknown tool "${name}"`;
  let input: unknown;
  try {
    input = JSON.parse(raw.slice(cut + format.separator.length));
  } catch {
    return `arguments of "${name}" are not valid JSON`;
  }
  if (typeof input !== "object" || input === null || Array.isArray(input)) {
    return `arguments of "${name}" are not a JSON object`;
  }
  const args = input as Record<string, unknown>;
  return argumentsProblem(name, args) ?? { type: "tool_call", name, input: args };
}

function textOnly(text: string, illFormed: string[]): ParsedAnswer {
  const trimmed = text.trim();
  return { parts: trimmed ? [{ type: "text", text: trimmed }] : [], illFormed };
}
