/**
 * Structural mutation of a JSON body: a few random nodes replaced by hostile values, deleted,
 * given extra keys, retyped or repeated. The base is a valid body (built from a zod schema, or a
 * request Claude Code really sent), so most mutations land one step from valid.
 *
 * @module
 */
import { type HostileOptions, hostileString, hostileValue, PROTOTYPE_NAMES } from "./hostile.ts";
import { cloneJson, encodeJson, preview, Raw, setKey } from "./json_text.ts";
import type { Prng } from "./prng.ts";

type Path = (string | number)[];

/** A mutated body and what was done to it, for the report of a failure. */
export interface Mutated {
  readonly value: unknown;
  readonly notes: string[];
}

/** Applies 1–3 mutations to a copy of `base`. */
export function mutate(prng: Prng, base: unknown, options: HostileOptions): Mutated {
  let value = cloneJson(base);
  const notes: string[] = [];
  const count = prng.weighted([[6, 1], [3, 2], [1, 3]]);
  for (let i = 0; i < count; i++) {
    const path = pickPath(prng, value);
    const target = get(value, path);
    const op = prng.weighted<string>([
      [5, "replace"],
      [2, "delete"],
      [3, "add_key"],
      [2, "same_type"],
      [1, "wrap"],
      [1, "repeat"],
    ]);
    const where = path.join(".") || "(body)";
    if (op === "delete" && path.length > 0) {
      remove(value, path);
      notes.push(`delete ${where}`);
    } else if (op === "add_key" && isObject(target)) {
      const key = prng.chance(0.6)
        ? prng.pick(PROTOTYPE_NAMES)
        : preview(hostileString(prng, { maxString: 300 }), 300);
      const added = hostileValue(prng, options);
      setKey(target as Record<string, unknown>, key, added);
      notes.push(`add ${where}[${JSON.stringify(preview(key, 40))}] = ${describe(added)}`);
    } else if (op === "same_type" && typeof target === "string") {
      const replaced = hostileString(prng, options);
      value = set(value, path, replaced);
      notes.push(`set ${where} = ${describe(replaced)}`);
    } else if (op === "wrap") {
      const wrapped = prng.chance(0.5) ? [target] : { value: target };
      value = set(value, path, wrapped);
      notes.push(`wrap ${where} in ${Array.isArray(wrapped) ? "an array" : "an object"}`);
    } else if (op === "repeat" && Array.isArray(target) && target.length > 0) {
      const item = target[prng.int(target.length)];
      // A large element repeated a thousand times would only exhaust the fuzzer's own memory.
      const times = encodeJson(item).length > 8_192 ? 2 : prng.pick([2, 100, 1_001]);
      target.push(...Array.from({ length: times }, () => cloneJson(item)));
      notes.push(`repeat an element of ${where} ${times} times`);
    } else {
      const replaced = hostileValue(prng, options);
      value = set(value, path, replaced);
      notes.push(`set ${where} = ${describe(replaced)}`);
    }
  }
  return { value, notes };
}

/** A random node's path, the root included, found by a bounded walk. */
function pickPath(prng: Prng, root: unknown): Path {
  const queue: { value: unknown; path: Path }[] = [{ value: root, path: [] }];
  // Reservoir sampling over at most 5,000 nodes keeps large recorded bodies cheap.
  let seen = 1;
  let chosen: Path = [];
  for (let next = 0; next < queue.length && seen < 5_000; next++) {
    const { value, path } = queue[next];
    if (value instanceof Raw || typeof value !== "object" || value === null) continue;
    const entries: [string | number, unknown][] = Array.isArray(value)
      ? value.slice(0, 50).map((item, i) => [i, item])
      : Object.keys(value).map((key) => [key, (value as Record<string, unknown>)[key]]);
    for (const [key, child] of entries) {
      const childPath = [...path, key];
      seen++;
      if (prng.int(seen) === 0) chosen = childPath;
      queue.push({ value: child, path: childPath });
    }
  }
  return chosen.length === 0 && prng.chance(0.9) ? pickAny(root) : chosen;
}

/** A shallow path, when the sampling chose the root: the root is mutated rarely. */
function pickAny(root: unknown): Path {
  if (isObject(root)) {
    const keys = Object.keys(root as object);
    if (keys.length > 0) return [keys[0]];
  }
  return [];
}

function isObject(value: unknown): boolean {
  return typeof value === "object" && value !== null && !Array.isArray(value) &&
    !(value instanceof Raw);
}

function get(root: unknown, path: Path): unknown {
  let at = root;
  for (const key of path) at = (at as Record<string | number, unknown>)[key];
  return at;
}

function set(root: unknown, path: Path, value: unknown): unknown {
  if (path.length === 0) return value;
  const parent = get(root, path.slice(0, -1)) as Record<string | number, unknown>;
  const key = path[path.length - 1];
  if (Array.isArray(parent)) parent[key as number] = value;
  else setKey(parent as Record<string, unknown>, String(key), value);
  return root;
}

function remove(root: unknown, path: Path): void {
  const parent = get(root, path.slice(0, -1));
  const key = path[path.length - 1];
  if (Array.isArray(parent)) parent.splice(key as number, 1);
  else delete (parent as Record<string, unknown>)[key as string];
}

/** A short description of a value for reports: its type, size or text. */
export function describe(value: unknown): string {
  if (value instanceof Raw) return `raw(${value.label})`;
  if (typeof value === "string") return `string(${JSON.stringify(preview(value, 60))})`;
  if (Array.isArray(value)) return `array(${value.length})`;
  if (typeof value === "object" && value !== null) {
    const keys = Object.keys(value);
    return `object{${preview(keys.slice(0, 4).join(","), 60)}${keys.length > 4 ? ",…" : ""}}`;
  }
  return JSON.stringify(value);
}
