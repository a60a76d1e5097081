/**
 * Finds hermes/Qwen-style tool calls (`<tool_call>\n{"name": …, "arguments": {…}}\n</tool_call>`)
 * in model text. A call that cannot be used stays in the text, with the reason recorded (T6).
 * Arguments must have the shape the gateway accepts in requests (see `jsonShapeProblem`), so the
 * client's echo of a call is never refused.
 *
 * @module
 */
import { jsonShapeProblem, MAX_JSON_DEPTH } from "../limits/mod.ts";

const OPEN = "<tool_call>";
/** Levels above a tool call's input in a request echoing it (body → messages → message → content → block). */
const ECHO_DEPTH = 5;
const CLOSE = "</tool_call>";

/** A piece of the answer: plain text, or a well-formed tool call. */
export type AnswerPart =
  | { readonly type: "text"; readonly text: string }
  | { readonly type: "tool_call"; readonly name: string; readonly input: Record<string, unknown> };

/** The answer split into parts, with one reason per tool call that stayed text. */
export interface ParsedAnswer {
  readonly parts: AnswerPart[];
  readonly illFormed: string[];
}

/**
 * Splits `text` into text and tool calls. `toolNames` are the tools the request offered; a call
 * to any other name, bad JSON, a missing name, non-object arguments or a missing closing tag
 * all leave the call's raw text in the surrounding text block.
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { parseToolCalls } from "./tool_parser.ts";
 * const text =
 *   'Listing.\n<tool_call>\n{"name": "Bash", "arguments": {"command": "ls"}}\n</tool_call>';
 * assert.deepEqual(parseToolCalls(text, new Set(["Bash"])), {
 *   parts: [
 *     { type: "text", text: "Listing." },
 *     { type: "tool_call", name: "Bash", input: { command: "ls" } },
 *   ],
 *   illFormed: [],
 * });
 * ```
 */
export function parseToolCalls(text: string, toolNames: ReadonlySet<string>): ParsedAnswer {
  return splitTaggedCalls(text, (body) => {
    const call = readCall(body, toolNames);
    return typeof call === "string" ? call : [call];
  });
}

/**
 * Splits `text` at each `<tool_call>` … `</tool_call>` block into text and the calls `read` finds
 * in the block's body. A block `read` refuses (with its reason), or one without a closing tag,
 * stays in the surrounding text; text is trimmed, and empty text dropped.
 */
export function splitTaggedCalls(
  text: string,
  read: (body: string) => AnswerPart[] | string,
): ParsedAnswer {
  const parts: AnswerPart[] = [];
  const illFormed: string[] = [];
  let pending = "";
  const flush = () => {
    const trimmed = pending.trim();
    if (trimmed.length > 0) parts.push({ type: "text", text: trimmed });
    pending = "";
  };
  let at = 0;
  while (at < text.length) {
    const open = text.indexOf(OPEN, at);
    if (open < 0) break;
    pending += text.slice(at, open);
    const close = text.indexOf(CLOSE, open + OPEN.length);
    if (close < 0) {
      illFormed.push("tool call without a closing </tool_call>");
      pending += text.slice(open);
      at = text.length;
      break;
    }
    const calls = read(text.slice(open + OPEN.length, close));
    if (typeof calls === "string") {
      illFormed.push(calls);
      pending += text.slice(open, close + CLOSE.length);
    } else {
      flush();
      parts.push(...calls);
    }
    at = close + CLOSE.length;
  }
  pending += text.slice(at);
  flush();
  return { parts, illFormed };
}

/** A tool call from the JSON between the tags, or the reason it cannot be one. */
function readCall(body: string, toolNames: ReadonlySet<string>): AnswerPart | string {
  let value: unknown;
  try {
    value = JSON.parse(body);
  } catch {
    return "tool call is not valid JSON";
  }
  if (!isObject(value)) return "tool call is not a JSON object";
  const name = value.name;
  if (typeof name !== "string" || name.length === 0) return "tool call has no name";
  if (!toolNames.has(name)) return `tool call names an unknown tool "${name}"`;
  let input = value.arguments ?? value.parameters ?? {};
  if (typeof input === "string") {
    try {
      input = JSON.parse(input);
    } catch {
      return `arguments of "${name}" are not a JSON object`;
    }
  }
  if (!isObject(input)) return `arguments of "${name}" are not a JSON object`;
  return argumentsProblem(name, input) ?? { type: "tool_call", name, input };
}

/**
 * Why a call's parsed arguments cannot reach the client, or `null`: they must have the shape the
 * gateway accepts in requests (see `jsonShapeProblem`), so the client's echo is never refused.
 */
export function argumentsProblem(name: string, input: Record<string, unknown>): string | null {
  // Echoed back inside a message, the arguments sit a few levels below the body's root.
  const problem = jsonShapeProblem(input, MAX_JSON_DEPTH - ECHO_DEPTH);
  return problem ? `arguments of "${name}" at ${problem.path || "top"}: ${problem.message}` : null;
}

function isObject(value: unknown): value is Record<string, unknown> {
  return typeof value === "object" && value !== null && !Array.isArray(value);
}
