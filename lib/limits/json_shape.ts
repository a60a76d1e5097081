/**
 * The shape every JSON value from outside must have before any code walks it: nested at most
 * {@linkcode MAX_JSON_DEPTH} deep (recursive code — KV's serializer, canonical JSON — would
 * overflow the stack on thousands of levels), and with no `__proto__` key, which most object
 * handling (zod, spreading into a literal, assignment) would silently drop or turn into a
 * prototype. The walk is iterative, so no input can overflow it.
 *
 * @module
 */
import { MAX_JSON_DEPTH } from "./bounds.ts";

/** A JSON value's shape problem: where it is (`messages.0.content`) and what it is. */
export interface JsonShapeProblem {
  readonly path: string;
  readonly message: string;
}

/**
 * The first shape problem of a parsed JSON value, or `null`. Fields of the top-level object whose
 * value is in `checked` are not walked: they were checked before, as fields (a body's recurring
 * fields, parsed once for many bodies).
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { jsonShapeProblem } from "./json_shape.ts";
 * assert.deepEqual(jsonShapeProblem(JSON.parse('{"a": {"__proto__": 1}}')), {
 *   path: "a.__proto__",
 *   message: 'key "__proto__" is not allowed',
 * });
 * assert.equal(jsonShapeProblem({ a: [1] }), null);
 * ```
 */
export function jsonShapeProblem(
  value: unknown,
  maxDepth: number = MAX_JSON_DEPTH,
  checked?: ReadonlySet<unknown> | null,
): JsonShapeProblem | null {
  // The common case, a good body, costs one pass that pushes only objects and arrays; the path
  // of a problem is found by a second, slower pass.
  const values: unknown[] = [value];
  const depths: number[] = [1];
  while (values.length > 0) {
    const item = values.pop() as object;
    const depth = depths.pop()!;
    if (typeof item !== "object" || item === null) continue;
    if (depth > maxDepth || (!Array.isArray(item) && Object.hasOwn(item, "__proto__"))) {
      return locateProblem(value, maxDepth);
    }
    const children = Array.isArray(item) ? item : Object.values(item);
    for (let i = 0; i < children.length; i++) {
      const child = children[i];
      if (typeof child === "object" && child !== null && !(depth === 1 && checked?.has(child))) {
        values.push(child);
        depths.push(depth + 1);
      }
    }
  }
  return null;
}

/** The first problem with its path, in document order. */
function locateProblem(value: unknown, maxDepth: number): JsonShapeProblem | null {
  interface Frame {
    readonly value: unknown;
    readonly depth: number;
    readonly parent: Frame | null;
    readonly key: string;
  }
  const stack: Frame[] = [{ value, depth: 1, parent: null, key: "" }];
  while (stack.length > 0) {
    const frame = stack.pop()!;
    const item = frame.value;
    if (typeof item !== "object" || item === null) continue;
    if (frame.depth > maxDepth) {
      return { path: pathOf(frame), message: `nested deeper than ${maxDepth} levels` };
    }
    const children: Frame[] = [];
    for (const key of Object.keys(item)) {
      const child: Frame = {
        value: (item as Record<string, unknown>)[key],
        depth: frame.depth + 1,
        parent: frame,
        key,
      };
      if (key === "__proto__" && !Array.isArray(item)) {
        return { path: pathOf(child), message: `key "__proto__" is not allowed` };
      }
      children.push(child);
    }
    for (let i = children.length - 1; i >= 0; i--) stack.push(children[i]); // no spread: long arrays
  }
  return null;
}

function pathOf(frame: {
  readonly parent: { readonly parent: unknown; readonly key: string } | null;
  readonly key: string;
}): string {
  const parts: string[] = [];
  // deno-lint-ignore no-explicit-any
  for (let at: any = frame; at?.parent; at = at.parent) parts.push(at.key);
  parts.reverse();
  // A path thousands of levels deep is shown by its ends.
  return (parts.length > 12 ? [...parts.slice(0, 8), "…", ...parts.slice(-2)] : parts).join(".");
}
