/**
 * Finds Qwen3-Coder's XML tool calls in model text, as SGLang's `qwen3_coder` detector reads them
 * (`python/sglang/srt/function_call/qwen3_coder_detector.py`):
 *
 * ```
 * <tool_call>
 * <function=NAME>
 * <parameter=KEY>
 * VALUE
 * </parameter>
 * </function>
 * </tool_call>
 * ```
 *
 * A value loses one leading and one trailing newline and is typed by the tool's schema: strings
 * stay text; integers and numbers become numbers, booleans `true`/`false`, objects and arrays
 * JSON; `null` is null whatever the type. Unlike SGLang, text around and between calls is kept,
 * and a call that cannot be used stays text with the reason (T6).
 *
 * @module
 */
import {
  type AnswerPart,
  argumentsProblem,
  type ParsedAnswer,
  splitTaggedCalls,
} from "./tool_parser.ts";

const FUNCTION = /<function=(.*?)<\/function>|<function=(.*)$/gs;
const PARAMETER = /<parameter=(.*?)(?:<\/parameter>|(?=<parameter=)|(?=<\/function>)|$)/gs;

/** The tools a request offered: name → its JSON-schema `parameters` (when it has any). */
export type ToolSchemas = ReadonlyMap<string, Readonly<Record<string, unknown>> | undefined>;

/**
 * Splits `text` into text and tool calls. A call to a tool the request did not offer, one
 * without a `<function=…>`, arguments of a shape requests may not carry, or a missing closing
 * tag leave the call's raw text in the surrounding text block.
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { parseQwen3CoderCalls } from "./qwen3_coder_parser.ts";
 * const tools = new Map([["run", { type: "object", properties: { n: { type: "integer" } } }]]);
 * const text =
 *   "<tool_call>\n<function=run>\n<parameter=n>\n3\n</parameter>\n</function>\n</tool_call>";
 * assert.deepEqual(parseQwen3CoderCalls(text, tools), {
 *   parts: [{ type: "tool_call", name: "run", input: { n: 3 } }],
 *   illFormed: [],
 * });
 * ```
 */
export function parseQwen3CoderCalls(text: string, tools: ToolSchemas): ParsedAnswer {
  return splitTaggedCalls(text, (body) => readCalls(body, tools));
}

/** The calls between one pair of tags (SGLang reads every `<function=…>` in it), or why not. */
function readCalls(body: string, tools: ToolSchemas): AnswerPart[] | string {
  const calls: AnswerPart[] = [];
  for (const match of body.matchAll(FUNCTION)) {
    const inner = match[1] ?? match[2];
    const end = inner.indexOf(">");
    if (end < 0) return "tool call has a <function= without a name";
    const name = inner.slice(0, end);
    if (!tools.has(name)) return `tool call names an unknown tool "${name}"`;
    const properties = propertiesOf(tools.get(name));
    // A Map: parameter names come from the model, and are never keys of a plain object.
    const values = new Map<string, unknown>();
    for (const parameter of inner.slice(end + 1).matchAll(PARAMETER)) {
      const raw = parameter[1];
      const cut = raw.indexOf(">");
      if (cut < 0) continue;
      const key = raw.slice(0, cut);
      let value = raw.slice(cut + 1);
      if (value.startsWith("\n")) value = value.slice(1);
      if (value.endsWith("\n")) value = value.slice(0, -1);
      values.set(key, typedValue(value, properties.get(key)));
    }
    // Own properties, `__proto__` included, which the shape check then refuses.
    const input = Object.fromEntries(values);
    const problem = argumentsProblem(name, input);
    if (problem) return problem;
    calls.push({ type: "tool_call", name, input });
  }
  return calls.length > 0 ? calls : "tool call has no <function=…>";
}

/** A tool's parameter schemas by name (its `properties`, or the schema itself without them). */
function propertiesOf(schema: Readonly<Record<string, unknown>> | undefined): Map<string, unknown> {
  if (!schema) return new Map();
  const properties = isObject(schema.properties) ? schema.properties : schema;
  return new Map(Object.entries(properties));
}

/**
 * A parameter's value as its schema types it (`_convert_param_value`): a parameter the schema
 * does not name stays text; a value that does not convert stays text, but a boolean, which is
 * `true` only for "true".
 */
export function typedValue(value: string, schema: unknown): unknown {
  if (value.toLowerCase() === "null") return null;
  if (schema === undefined) return value;
  const type = isObject(schema) && Object.hasOwn(schema, "type")
    ? String(schema.type).trim().toLowerCase()
    : "string";
  if (["string", "str", "text", "varchar", "char", "enum"].includes(type)) return value;
  if (/^(int|uint|long|short|unsigned)/.test(type)) return pythonInt(value) ?? value;
  if (type.startsWith("num") || type.startsWith("float")) return pythonFloat(value) ?? value;
  if (["boolean", "bool", "binary"].includes(type)) return value.toLowerCase() === "true";
  if (["object", "array", "arr"].includes(type) || /^(dict|list)/.test(type)) {
    try {
      return JSON.parse(value);
    } catch { /* Python literals, below */ }
  }
  return pythonLiteral(value) ?? value;
}

/** Python's `int(text)`, or `undefined` when it raises (or would lose precision here). */
function pythonInt(text: string): number | undefined {
  const trimmed = text.trim();
  if (!/^[+-]?\d+(?:_\d+)*$/.test(trimmed)) return undefined;
  const value = Number(trimmed.replaceAll("_", ""));
  return Number.isSafeInteger(value) ? value : undefined;
}

/**
 * Python's `float(text)`, an integer when the text had no `.` or exponent (as SGLang turns it
 * back); `undefined` when it raises, and for infinities and NaN, which JSON cannot carry.
 */
function pythonFloat(text: string): number | undefined {
  const trimmed = text.trim();
  if (
    !/^[+-]?(?:\d+(?:_\d+)*(?:\.(?:\d+(?:_\d+)*)?)?|\.\d+(?:_\d+)*)(?:[eE][+-]?\d+)?$/.test(trimmed)
  ) {
    return undefined;
  }
  const value = Number(trimmed.replaceAll("_", ""));
  return Number.isFinite(value) ? value : undefined;
}

/**
 * Python's `ast.literal_eval` for what a tool argument can hold, as JSON can carry it: numbers,
 * `True`/`False`/`None`, quoted strings, and lists and dicts of those written as JSON would be
 * (with Python's constants); `undefined` for anything else.
 */
function pythonLiteral(text: string): unknown {
  const trimmed = text.trim();
  if (trimmed === "True") return true;
  if (trimmed === "False") return false;
  if (trimmed === "None") return null;
  const number = pythonFloat(trimmed);
  if (number !== undefined) return number;
  if (/^'(?:[^'\\\n]|\\.)*'$/.test(trimmed)) {
    try {
      return JSON.parse(`"${trimmed.slice(1, -1).replaceAll('"', '\\"').replaceAll("\\'", "'")}"`);
    } catch {
      return undefined;
    }
  }
  if (/^"(?:[^"\\\n]|\\.)*"$/.test(trimmed) || /^[[{]/.test(trimmed)) {
    // JSON with Python's constants; JSON's own (true, false, null) are not Python literals.
    const json = replaceOutsideStrings(trimmed);
    if (json === null) return undefined;
    try {
      return JSON.parse(json);
    } catch {
      return undefined;
    }
  }
  return undefined;
}

/**
 * `text` with Python's `True`, `False` and `None` outside string literals written as JSON's;
 * `null` when it holds JSON's own constants there (not a Python literal).
 */
function replaceOutsideStrings(text: string): string | null {
  let out = "";
  for (const [token] of text.matchAll(/"(?:[^"\\]|\\.)*"|[A-Za-z_]+|[^"A-Za-z_]+|"/g)) {
    if (token === '"') return null; // an unterminated string
    if (/^[A-Za-z_]/.test(token)) {
      const constant = PYTHON_CONSTANTS.get(token);
      if (constant === undefined) return null;
      out += constant;
    } else out += token;
  }
  return out;
}

const PYTHON_CONSTANTS = new Map([["True", "true"], ["False", "false"], ["None", "null"]]);

function isObject(value: unknown): value is Record<string, unknown> {
  return typeof value === "object" && value !== null && !Array.isArray(value);
}
