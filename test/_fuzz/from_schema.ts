/**
 * Sample values built from a zod schema by walking its definition: every field the schema
 * knows appears (optional ones most of the time), each with a value of its type that meets its
 * length, range, enum and pattern checks where it can. Refinements across fields are not
 * followed, so a sample may still be refused: it is a base to mutate, not a valid request.
 *
 * @module
 */
import type { Prng } from "./prng.ts";

// deno-lint-ignore no-explicit-any
type AnySchema = any;

/** Plausible strings tried against a pattern check, in order. */
const PATTERN_CANDIDATES = [
  "fz_sample_1",
  "1bdf00de100a0db07eae541924db3a45524b6156",
  "grp_0123456789abcdef01234567",
  "test_f2p.py",
  "FUZZ_VAR",
  "/repo",
  "fixture:python_unittest",
  "tests",
  "Bash",
  "qwen3",
  "x",
];

/** A sample of `schema`; `depth` bounds recursion through nested schemas. */
export function sampleOf(schema: AnySchema, prng: Prng, depth = 0): unknown {
  const def = schema._zod.def;
  switch (def.type) {
    case "optional":
    case "default":
    case "prefault":
    case "nullable":
    case "readonly":
    case "catch":
      return sampleOf(def.innerType, prng, depth);
    case "pipe":
      return sampleOf(def.in, prng, depth);
    case "lazy":
      return sampleOf(def.getter(), prng, depth + 1);
    case "object": {
      const out: Record<string, unknown> = {};
      for (const [key, field] of Object.entries(def.shape)) {
        const optional = ["optional", "default", "prefault"].includes(
          (field as AnySchema)._zod.def.type,
        );
        if (optional && (depth > 3 || prng.chance(0.3))) continue;
        out[key] = sampleOf(field, prng, depth + 1);
      }
      return out;
    }
    case "array": {
      if (depth > 5) return [];
      const min = check(def, "min_length") ?? 0;
      const length = Math.max(min, prng.size(1, 3));
      return Array.from({ length }, () => sampleOf(def.element, prng, depth + 1));
    }
    case "record":
      return {
        [String(sampleOf(def.keyType, prng, depth + 1))]: sampleOf(def.valueType, prng, depth + 1),
      };
    case "union":
      return sampleOf(prng.pick(def.options), prng, depth + 1);
    case "enum":
      return prng.pick(Object.values(def.entries));
    case "literal":
      return def.values[0];
    case "boolean":
      return def.coerce ? String(prng.chance(0.5)) : prng.chance(0.5);
    case "number": {
      const min = check(def, "greater_than") ?? 0;
      const max = check(def, "less_than") ?? min + 1000;
      const value = prng.chance(0.5) ? min : Math.floor(min + prng.next() * (max - min));
      return def.coerce ? String(value) : value;
    }
    case "string":
      return sampleString(def, prng);
    case "null":
      return null;
    default: // unknown, any, custom
      return prng.pick(["x", 1, {}, []]);
  }
}

function sampleString(def: AnySchema, prng: Prng): string {
  const patterns: RegExp[] = (def.checks ?? [])
    .map((c: AnySchema) => c._zod.def)
    .filter((c: AnySchema) => c.check === "string_format" && c.pattern)
    .map((c: AnySchema) => c.pattern);
  const min = check(def, "min_length") ?? 0;
  const max = check(def, "max_length") ?? Infinity;
  const fits = (text: string) =>
    text.length >= min && text.length <= max && patterns.every((p) => p.test(text));
  const candidates = [prng.pick(["hello", "Sample text", "fuzz"]), ...PATTERN_CANDIDATES];
  return candidates.find(fits) ?? "x".repeat(Math.max(1, min));
}

/** The value of a check on a definition (`min_length`, `greater_than`…), when it has one. */
function check(def: AnySchema, kind: string): number | undefined {
  for (const c of def.checks ?? []) {
    const d = c._zod.def;
    if (d.check !== kind) continue;
    return d.minimum ?? d.maximum ?? d.value;
  }
  return undefined;
}
