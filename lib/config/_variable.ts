/**
 * One environment variable as the configuration schema declares it: a zod schema of its trimmed
 * value, registered with everything else the gateway knows about it (name, fallback, the text of
 * its start-up error and of its documentation).
 *
 * @module
 */
import { z } from "zod";

/** The schema of a variable's trimmed, non-empty value. */
export type ValueSchema = z.ZodType<unknown, string>;

/** The range an integer variable must lie in, both ends included. */
export interface Bounds {
  readonly min: number;
  readonly max: number;
}

/** Everything known about one environment variable besides its schema. */
export interface VariableFacts {
  /** The environment variable's name. */
  readonly name: string;
  /** What a good value looks like, for the start-up error (`an integer from 0 to 65535`). */
  readonly expected: string;
  /** The raw value used when the variable is unset or blank; none: the setting is `null`. */
  readonly fallback?: string;
  /** The default as the documentation shows it (markdown). */
  readonly shown: string;
  /** What the variable means, as the documentation says it (markdown). */
  readonly meaning: string;
  /** The range of an integer variable. */
  readonly bounds?: Bounds;
  /** Its value is a secret: never printed (an error, the configuration dump show `***`). */
  readonly secret?: boolean;
}

/** A variable as the configuration schema declares it, and where its value lands. */
export interface Declaration extends VariableFacts {
  /** The configuration field the variable fills: `["port"]`, `["rollout", "pollMs"]`. */
  readonly path: readonly string[];
  /** Parses the trimmed value, or `null` for an unset variable without a fallback. */
  readonly schema: z.ZodType;
}

const registry = z.registry<VariableFacts>();
const integerBounds = new WeakMap<ValueSchema, Bounds>();

/** An integer written in decimal digits, from `min` to `max`. */
export function int(min: number, max: number) {
  const schema = z.string().regex(/^\d+$/).transform(Number).pipe(
    z.number().int().min(min).max(max),
  );
  integerBounds.set(schema, { min, max });
  return schema;
}

/** `1`, `true`, `yes`, `on` and their opposites. */
export const bool = z.enum(["1", "0", "true", "false", "yes", "no", "on", "off"]).transform((v) =>
  ["1", "true", "yes", "on"].includes(v)
);

/** An http(s) URL, without trailing slashes. */
export const httpUrl = z.url({ protocol: /^https?$/ }).transform((url) => url.replace(/\/+$/, ""));

/** What every variable says about itself; the integer ones may leave `expected` to their bounds. */
interface About {
  /** What a good value looks like; for an {@linkcode int}: `an integer from min to max`. */
  readonly expected?: string;
  /** What the variable means, for the documentation. */
  readonly meaning: string;
  /** Its value is a secret, never printed. */
  readonly secret?: boolean;
}

/**
 * Declares the environment variable `name` whose trimmed value `schema` parses.
 *
 * With a `fallback` the setting always has a value (shown as the fallback unless `shown` says);
 * without one an unset variable makes it `null`, and `shown` tells what that means.
 */
export function variable<S extends ValueSchema>(
  name: string,
  schema: S,
  about: About & { readonly fallback: string; readonly shown?: string },
): S;
export function variable<S extends ValueSchema>(
  name: string,
  schema: S,
  about: About & { readonly fallback?: undefined; readonly shown: string },
): z.ZodNullable<S>;
export function variable(
  name: string,
  schema: ValueSchema,
  about: About & { readonly fallback?: string; readonly shown?: string },
): z.ZodType {
  const bounds = integerBounds.get(schema);
  const expected = about.expected ??
    (bounds === undefined ? undefined : `an integer from ${bounds.min} to ${bounds.max}`);
  if (expected === undefined) throw new TypeError(`Variable ${name} does not say what it expects`);
  const { fallback, meaning, secret } = about;
  const shown = about.shown ?? `\`${fallback}\``;
  const leaf = fallback === undefined ? schema.nullable() : schema.clone();
  return leaf.register(registry, { name, expected, fallback, shown, meaning, bounds, secret });
}

/** Every variable `object` declares, nested objects included, in declaration order. */
export function declarations(object: z.ZodObject, path: readonly string[] = []): Declaration[] {
  return Object.entries(object.shape).flatMap(([key, schema]): Declaration[] => {
    const facts = registry.get(schema);
    if (facts !== undefined) return [{ ...facts, path: [...path, key], schema }];
    if (schema instanceof z.ZodObject) return declarations(schema, [...path, key]);
    throw new TypeError(`Configuration field ${[...path, key].join(".")} is not a variable`);
  });
}

/** `T` with every property, at every depth, read-only (a map's values too). */
export type DeepReadonly<T> = T extends readonly (infer U)[] ? readonly DeepReadonly<U>[]
  : T extends ReadonlyMap<infer K, infer V> ? ReadonlyMap<K, DeepReadonly<V>>
  : T extends object ? { readonly [K in keyof T]: DeepReadonly<T[K]> }
  : T;
