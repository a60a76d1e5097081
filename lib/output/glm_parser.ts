/**
 * GLM's tool calls, as SGLang's `glm45` (GLM-4.5/4.6) and `glm47` (GLM-4.7) detectors read them:
 *
 * - `glm45`: `<tool_call>NAME\n<arg_key>K</arg_key>\n<arg_value>V</arg_value>\n…</tool_call>`
 *   (the name ends at the first newline, real or a literal `\n`);
 * - `glm47`: `<tool_call>NAME<arg_key>K</arg_key><arg_value>V</arg_value>…</tool_call>` (the name
 *   is what precedes the first `<arg_key>`; a call may have no arguments).
 *
 * A value is read as JSON, else as JSON escaped inside a string (a model that writes `[{\"a\":
 * 1}]`), else kept as text, and then typed by the tool's schema (`infer_type_from_json_schema`):
 * a `string` parameter keeps the text the model wrote, or the string a JSON string held; a
 * `number` that is still text becomes a number when it reads as one; any other type keeps what
 * JSON gave. SGLang also tries Python literals, and re-prints a string parameter that parsed as
 * another JSON value (`true` becomes `True`); neither is reproduced.
 *
 * As for the other formats, text around calls is kept, and a call that cannot be used (an
 * unknown tool, no closing tag) stays text with the reasons (T6).
 *
 * @module
 */
import type { ToolSchemas } from "./qwen3_coder_parser.ts";
import { argumentsProblem, type ParsedAnswer, splitTaggedCalls } from "./tool_parser.ts";

/** Which GLM call format: 4.5/4.6 (newlines) or 4.7 (none). */
export type GlmVariant = "glm45" | "glm47";

const ARGUMENT = /<arg_key>([\s\S]*?)<\/arg_key>(?:\\n|\s)*<arg_value>([\s\S]*?)<\/arg_value>/g;
const GLM45_NAME = /^([\s\S]*?)(?:\\n|\n)([\s\S]*)$/;

/**
 * GLM's tool calls in `text`, values typed by `tools`' schemas.
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { parseGlmCalls } from "./glm_parser.ts";
 * const tools = new Map([["run", { type: "object", properties: { n: { type: "integer" } } }]]);
 * const text = "<tool_call>run<arg_key>n</arg_key><arg_value>2</arg_value></tool_call>";
 * assert.deepEqual(parseGlmCalls(text, tools, "glm47"), {
 *   parts: [{ type: "tool_call", name: "run", input: { n: 2 } }],
 *   illFormed: [],
 * });
 * ```
 */
export function parseGlmCalls(
  text: string,
  tools: ToolSchemas,
  variant: GlmVariant,
): ParsedAnswer {
  return splitTaggedCalls(text, (body) => {
    let name: string;
    let rest: string;
    if (variant === "glm45") {
      const split = GLM45_NAME.exec(body);
      [name, rest] = split ? [split[1], split[2]] : [body, ""];
    } else {
      const at = body.indexOf("<arg_key>");
      [name, rest] = at < 0 ? [body, ""] : [body.slice(0, at), body.slice(at)];
    }
    name = name.trim();
    if (name.length === 0) return "tool call has no name";
    if (!tools.has(name)) return `tool call names an unknown tool "${name}"`;
    const properties = propertiesOf(tools.get(name));
    const input: Record<string, unknown> = {};
    for (const [, rawKey, value] of rest.matchAll(ARGUMENT)) {
      const key = rawKey.trim();
      const schema = Object.hasOwn(properties, key) ? properties[key] : undefined;
      Object.defineProperty(input, key, {
        value: typedValue(value, inferType(schema)),
        enumerable: true,
        writable: true,
        configurable: true,
      });
    }
    return argumentsProblem(name, input) ?? [{ type: "tool_call", name, input }];
  });
}

/** A tool's `properties`, or none. */
function propertiesOf(schema: unknown): Record<string, unknown> {
  if (typeof schema !== "object" || schema === null) return {};
  const properties = Object.hasOwn(schema, "properties")
    ? (schema as { properties: unknown }).properties
    : undefined;
  return typeof properties === "object" && properties !== null && !Array.isArray(properties)
    ? properties as Record<string, unknown>
    : {};
}

/** `value` read and typed as SGLang's `parse_arguments` and `_parse_argument_pairs` do. */
function typedValue(value: string, type: string | null): unknown {
  const parsed = readValue(value);
  if (type === "string") return typeof parsed === "string" ? parsed : value;
  if (type === "number" && typeof parsed === "string") return toNumber(parsed);
  return parsed;
}

/** JSON, else JSON escaped inside a string, else the text itself. */
function readValue(value: string): unknown {
  try {
    return JSON.parse(value);
  } catch { /* not JSON as written */ }
  try {
    return JSON.parse(JSON.parse(`{"tmp": "${value}"}`).tmp);
  } catch { /* not escaped JSON either */ }
  return value;
}

/** Python's `int()` or `float()` of `value` as SGLang's `_convert_to_number` picks, or `value`. */
function toNumber(value: string): number | string {
  const text = value.trim();
  const decimal = text.includes(".") || text.toLowerCase().includes("e");
  const pattern = decimal
    ? /^[+-]?(\d+\.?\d*|\.\d+)(e[+-]?\d+)?$|^[+-]?(inf|infinity|nan)$/i
    : /^[+-]?\d+$/;
  if (!pattern.test(text)) return value;
  const number = Number(text);
  return Number.isFinite(number) ? number : value;
}

/**
 * The primary type of a parameter's JSON schema, as SGLang's `infer_type_from_json_schema`: the
 * type (the first non-null of a list), else what `anyOf`/`oneOf` agree on (`string` when they
 * differ and one is), else the type of the `enum` values, else the first non-string type of
 * `allOf`, else `object` for `properties`, `array` for `items`; `null` when nothing says.
 */
export function inferType(schema: unknown): string | null {
  if (typeof schema !== "object" || schema === null || Array.isArray(schema)) return null;
  const own = (key: string): unknown =>
    Object.hasOwn(schema, key) ? (schema as Record<string, unknown>)[key] : undefined;
  const type = own("type");
  if (typeof type === "string") return type;
  if (Array.isArray(type) && type.length > 0) {
    const named = type.find((item) => item !== "null");
    return typeof named === "string" ? named : "string";
  }
  const options = own("anyOf") ?? own("oneOf");
  if (Array.isArray(options)) {
    const types = options.map(inferType).filter((item): item is string => item !== null);
    if (types.length > 0) {
      if (new Set(types).size === 1) return types[0];
      return types.includes("string") ? "string" : types[0];
    }
  }
  const values = own("enum");
  if (Array.isArray(values)) {
    const types = new Set(values.map(enumType));
    return types.size === 1 ? [...types][0] : "string";
  }
  const all = own("allOf");
  if (Array.isArray(all)) {
    for (const part of all) {
      const inferred = inferType(part);
      if (inferred !== null && inferred !== "string") return inferred;
    }
    return "string";
  }
  if (own("properties") !== undefined) return "object";
  if (own("items") !== undefined) return "array";
  return null;
}

function enumType(value: unknown): string {
  if (value === null) return "null";
  if (typeof value === "boolean") return "boolean";
  if (typeof value === "number") return Number.isInteger(value) ? "integer" : "number";
  if (typeof value === "string") return "string";
  if (Array.isArray(value)) return "array";
  return "object";
}
