/**
 * Fuzzed requests of the trainer's session API: open, list (status, limit, cursor,
 * `metadata.KEY` filters), read, reward, close, delete, and samples (format, allocation,
 * include_side, caps).
 *
 * @module
 */
import { SamplesQuery } from "../../functions/_samples.ts";
import {
  bodiless,
  bodyBytes,
  contentType,
  credentials,
  type FuzzCase,
  type FuzzWorld,
  hostileQueryValue,
  pathId,
  queryString,
  RawQuery,
} from "./case.ts";
import { sampleOf } from "./from_schema.ts";
import { deep, hostileString, PROTOTYPE_NAMES, TEMPLATE_STRINGS } from "./hostile.ts";
import { mutate } from "./mutate.ts";
import type { Prng } from "./prng.ts";

const OPTIONS = { maxString: 1_100_000 };

/** `POST /sessions`. */
export function openCase(prng: Prng, world: FuzzWorld): FuzzCase {
  const notes: string[] = [];
  const base: Record<string, unknown> = {};
  if (prng.chance(0.6)) {
    base.id = prng.chance(0.2)
      ? prng.pick(PROTOTYPE_NAMES.filter((n) => /^[\w-]+$/.test(n)))
      : `fz_${prng.int(1e9)}`;
  }
  if (prng.chance(0.7)) {
    base.metadata = { task: "astropy-1234", group_id: "grp_fuzz", nested: { list: [1, 2] } };
  }
  if (prng.chance(0.3)) base.reward_allocation = prng.pick(["uniform", "copy", "final_only"]);
  return bodyCase(prng, world, "POST /sessions", "/sessions", base, notes);
}

/** `POST /sessions/:id/reward`. */
export function rewardCase(prng: Prng, world: FuzzWorld): FuzzCase {
  const notes: string[] = [];
  const base = {
    score: prng.pick([1, 0, 0.5]),
    applied_cleanly: true,
    tests: { passed: ["tests.test_a"], failed: [] },
    evidence: { log_tail: TEMPLATE_STRINGS[0], nested: { deep: deep(prng) } },
  };
  if (prng.chance(0.5)) delete (base.evidence as Record<string, unknown>).nested;
  const id = pathId(prng, world.sessions.map((s) => s.id), notes);
  return bodyCase(prng, world, "POST /sessions/:id/reward", `/sessions/${id}/reward`, base, notes);
}

/** `POST /sessions/:id/close` or `DELETE /sessions/:id`. */
export function closeCase(prng: Prng, world: FuzzWorld, route: "close" | "delete"): FuzzCase {
  const notes: string[] = [];
  const id = pathId(prng, world.sessions.map((s) => s.id), notes);
  const headers = credentials(prng, world, world.adminToken, notes);
  return route === "close"
    ? bodiless("POST /sessions/:id/close", `/sessions/${id}/close`, headers, notes)
    : bodiless("DELETE /sessions/:id", `/sessions/${id}`, headers, notes);
}

/** `GET /sessions/:id` or `GET /sessions/:id/samples?…`; the untouched session is read too. */
export function readCase(prng: Prng, world: FuzzWorld, route: "view" | "samples"): FuzzCase {
  const notes: string[] = [];
  const id = pathId(prng, [...world.sessions.map((s) => s.id), world.untouched.id], notes);
  const headers = credentials(prng, world, world.adminToken, notes);
  if (route === "view") {
    return bodiless("GET /sessions/:id", `/sessions/${id}`, headers, notes);
  }
  const sample = sampleOf(SamplesQuery, prng) as Record<string, string>;
  const params: [string, string | RawQuery][] = Object.entries(sample).map((
    [k, v],
  ) => [k, String(v)]);
  fuzzParams(prng, params, [
    "format",
    "allocation",
    "include_side",
    "max_segments",
    "max_segment_tokens",
    "overlong",
  ], notes);
  return bodiless(
    "GET /sessions/:id/samples",
    `/sessions/${id}/samples${queryString(params)}`,
    headers,
    notes,
  );
}

/** `GET /sessions?status&limit&cursor&metadata.KEY`. */
export function listCase(prng: Prng, world: FuzzWorld): FuzzCase {
  const notes: string[] = [];
  const params: [string, string | RawQuery][] = [];
  if (prng.chance(0.5)) params.push(["status", prng.pick(["open", "closed"])]);
  if (prng.chance(0.6)) params.push(["limit", String(prng.pick([1, 2, 5, 100, 1000]))]);
  if (prng.chance(0.5)) params.push(["cursor", cursor(prng, world, notes)]);
  if (prng.chance(0.5)) {
    const key = prng.pick(["task", "group_id", ...PROTOTYPE_NAMES, "nested", "a.b", ""]);
    params.push([
      `metadata.${key}`,
      prng.pick(["astropy-1234", "grp_fuzz", "[object Object]", "undefined"]),
    ]);
  }
  fuzzParams(prng, params, [
    "status",
    "limit",
    "cursor",
    "metadata.__proto__",
    "metadata.constructor",
  ], notes);
  const headers = credentials(prng, world, world.adminToken, notes);
  return bodiless("GET /sessions", `/sessions${queryString(params)}`, headers, notes);
}

/** A cursor: one a listing handed out, changed, or made up. */
function cursor(prng: Prng, world: FuzzWorld, notes: string[]): string {
  const real = world.cursors.length > 0 ? prng.pick(world.cursors) : "AmZ6XzAA";
  const made = prng.weighted<() => string>([
    [3, () => real],
    [2, () => real.slice(0, prng.int(real.length))],
    [2, () => real + prng.pick(["A", "==", "%", "\u0000", "AAAA"])],
    [2, () => [...real].reverse().join("")],
    [
      2,
      () =>
        btoa(String.fromCharCode(...Array.from({ length: prng.size(1, 64) }, () => prng.int(256)))),
    ],
    [1, () => prng.pick(PROTOTYPE_NAMES)],
    [1, () => hostileString(prng, { maxString: 70_000 })],
    [1, () => "A".repeat(prng.pick([100, 5_000, 70_000]))],
  ])();
  if (made !== real) notes.push(`cursor ${JSON.stringify(made.slice(0, 60))}`);
  return made;
}

/** Replaces, repeats or adds query parameters with hostile values. */
export function fuzzParams(
  prng: Prng,
  params: [string, string | RawQuery][],
  names: readonly string[],
  notes: string[],
): void {
  const count = prng.weighted([[3, 0], [5, 1], [2, 2]]);
  for (let i = 0; i < count; i++) {
    const name = prng.chance(0.8) ? prng.pick(names) : prng.pick([...PROTOTYPE_NAMES, "x"]);
    const value = hostileQueryValue(prng);
    const at = params.findIndex(([n]) => n === name);
    if (at >= 0 && prng.chance(0.7)) params[at] = [name, value];
    else params.push([name, value]);
    notes.push(
      `query ${name}=${
        JSON.stringify(String(value instanceof RawQuery ? value.text : value).slice(0, 60))
      }`,
    );
  }
}

/** A JSON body case with the admin credential, `base` mutated most of the time. */
export function bodyCase(
  prng: Prng,
  world: FuzzWorld,
  endpoint: string,
  path: string,
  base: unknown,
  notes: string[],
): FuzzCase {
  let value = base;
  if (prng.chance(0.8)) {
    const mutated = mutate(prng, base, OPTIONS);
    value = mutated.value;
    notes.push(...mutated.notes);
  }
  const headers = {
    ...credentials(prng, world, world.adminToken, notes),
    ...contentType(prng, notes),
  };
  return {
    index: 0,
    endpoint,
    method: endpoint.split(" ")[0],
    path,
    headers,
    body: bodyBytes(prng, world, value, notes),
    notes,
  };
}
