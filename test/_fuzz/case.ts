/**
 * One fuzzed request, the state the generators draw on (tokens, ids, cursors seen so far), and
 * the pieces every surface shares: credentials, content types, whole-body corruptions, ids in
 * paths, query strings.
 *
 * @module
 */
import { hostileString, hugeLength, longString, PROTOTYPE_NAMES } from "./hostile.ts";
import { deepNesting, encodeJson, invalidUtf8String, preview } from "./json_text.ts";
import type { Prng } from "./prng.ts";

/** A request the fuzzer sends, with what was done to it. */
export interface FuzzCase {
  /** Position in the run; with the seed it regenerates the case. */
  index: number;
  /** The route, as `METHOD /pattern`, for the counts. */
  readonly endpoint: string;
  readonly method: string;
  /** Path and query string, as sent. */
  readonly path: string;
  readonly headers: Record<string, string>;
  readonly body: Uint8Array<ArrayBuffer> | null;
  /** What the generator did, for the report of a failure. */
  readonly notes: string[];
}

/**
 * A case with no body (GET, DELETE); its method is the endpoint's.
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { bodiless } from "./case.ts";
 * const fuzzed = bodiless(
 *   "GET /sessions/:id",
 *   "/sessions/sess_1",
 *   { authorization: "Bearer t" },
 *   [],
 * );
 * assert.equal(fuzzed.method, "GET");
 * assert.equal(fuzzed.body, null);
 * ```
 */
export function bodiless(
  endpoint: string,
  path: string,
  headers: Record<string, string>,
  notes: string[],
): FuzzCase {
  return { index: 0, endpoint, method: endpoint.split(" ")[0], path, headers, body: null, notes };
}

/** A session the fuzzer may use: its id and token. */
export interface FuzzSession {
  readonly id: string;
  readonly token: string;
}

/** What the generators know: credentials, live ids, bases to mutate. */
export interface FuzzWorld {
  readonly adminToken: string;
  /** Sessions the fuzzer may change (send turns to, reward, close, delete). */
  readonly sessions: FuzzSession[];
  /** Ids of the sessions above that a request closed. */
  readonly closed: Set<string>;
  /** The session recorded before the fuzzing that no request may change. */
  readonly untouched: FuzzSession;
  readonly jobIds: string[];
  readonly groupIds: string[];
  /** Cursors real listings handed out. */
  readonly cursors: string[];
  /** The last `POST /v1/messages` answered with 200, to send again. */
  lastTurn: FuzzCase | null;
  /** The body limit the gateway was configured with. */
  readonly maxBodyBytes: number;
}

/** A session that takes turns, when there is one; else the untouched one (never sent a turn). */
export function liveSession(prng: Prng, world: FuzzWorld): FuzzSession {
  const live = world.sessions.filter((session) => !world.closed.has(session.id));
  return live.length > 0 ? prng.pick(live.slice(-8)) : world.untouched;
}

/** Credentials: `right` (as `Authorization: Bearer` or `x-api-key`) most of the time. */
export function credentials(
  prng: Prng,
  world: FuzzWorld,
  right: string,
  notes: string[],
): Record<string, string> {
  const wrong = prng.weighted<() => [string, string] | null>([
    [88, () => null],
    [2, () => ["authorization", ""]],
    [2, () => ["authorization", `Bearer ${world.sessions[0]?.token ?? "x"}`]],
    [2, () => ["authorization", `Bearer ${world.adminToken}x`]],
    [2, () => ["authorization", `Bearer ${prng.pick(PROTOTYPE_NAMES)}`]],
    [
      1,
      () => ["authorization", `Bearer ${prng.pick(PROTOTYPE_NAMES)}.${prng.pick(PROTOTYPE_NAMES)}`],
    ],
    [1, () => ["x-api-key", "\xff\xfe\xc3("]], // bytes that are not UTF-8
    [1, () => ["authorization", `Bearer ${"a".repeat(prng.pick([1_000, 100_000]))}`]],
    [1, () => ["authorization", `Basic ${btoa("admin:admin")}`]],
    [1, () => ["x-api-key", `${world.untouched.id}.${"0".repeat(64)}`]],
  ])();
  if (wrong === null) {
    return prng.chance(0.5) ? { authorization: `Bearer ${right}` } : { "x-api-key": right };
  }
  notes.push(`credential ${wrong[0]}: ${JSON.stringify(preview(wrong[1], 60))}`);
  return { [wrong[0]]: wrong[1] };
}

/** A content type: JSON most of the time. */
export function contentType(prng: Prng, notes: string[]): Record<string, string> {
  const type = prng.weighted<string | null>([
    [90, "application/json"],
    [2, null],
    [2, "text/plain"],
    [2, "multipart/form-data; boundary=xyz"],
    [1, "application/x-www-form-urlencoded"],
    [1, "application/json; charset=utf-16"],
    [1, "\xff\xfe/\xc3("],
    [1, "application/json, application/json"],
  ]);
  if (type !== "application/json") notes.push(`content-type ${JSON.stringify(type)}`);
  return type === null ? {} : { "content-type": type };
}

/**
 * The body: `value` as JSON most of the time, else a corruption of the whole body (empty,
 * truncated, not JSON, not UTF-8, a bare scalar, deep at the root, over the size limit).
 */
export function bodyBytes(
  prng: Prng,
  world: FuzzWorld,
  value: unknown,
  notes: string[],
): Uint8Array<ArrayBuffer> {
  let cached: string | null = null;
  const text = () => cached ??= new TextDecoder().decode(encodeJson(value));
  const corrupt = prng.weighted<(() => Uint8Array<ArrayBuffer> | string) | null>([
    [88, null],
    [2, () => ""],
    [1, () => "   \n\t "],
    [2, () => text().slice(0, prng.int(text().length))],
    [1, () => "null"],
    [1, () => "[]"],
    [1, () => '"a string"'],
    [1, () => prng.pick(["1e309", "-0", "9007199254740993", "true"])],
    [1, () => "\ufeff" + text()],
    [1, () => text().replace("{", '{"model":1,"model":"dup",')],
    [1, () => new Uint8Array(Array.from({ length: prng.size(1, 2_000) }, () => prng.int(256)))],
    [1, () => encodeJson({ a: invalidUtf8String(prng) })],
    [1, () => encodeJson(deepNesting(prng.pick([1_000, 100_000]), "array"))],
    [1, () => "{'single': 'quotes'}"],
    [1, () => "\u0000"],
    [1, () => "x".repeat(world.maxBodyBytes + 1)],
  ]);
  if (corrupt === null) return encodeJson(value);
  const body = corrupt();
  notes.push(
    `whole body replaced: ${
      typeof body === "string" ? JSON.stringify(preview(body, 80)) : `${body.length} random bytes`
    }`,
  );
  return typeof body === "string" ? new TextEncoder().encode(body) : body;
}

/** An id for a path segment: a known one most of the time, else hostile (encoded or not). */
export function pathId(prng: Prng, known: readonly string[], notes: string[]): string {
  const id = prng.weighted<() => string>([
    [70, () => encode(known.length > 0 ? prng.pick(known) : "none")],
    [6, () => encode(prng.pick(PROTOTYPE_NAMES))],
    [3, () => "a".repeat(prng.pick([129, 2_049, 10_000]))],
    [3, () => prng.pick(["%ZZ", "%C3%28", "%FF%FE", "%00", "%2F..%2F", "..", "%E2%80%AE", "%"])],
    [3, () => encode(hostileString(prng, { maxString: 3_000 }))],
    [2, () => encode(longString(prng, hugeLength(prng, 70_000)))],
    [2, () => `job_${"0".repeat(24)}`],
    [2, () => `sess_${"f".repeat(32)}`],
  ])();
  if (!known.some((k) => encode(k) === id)) {
    notes.push(`id ${JSON.stringify(preview(id, 60))}`);
  }
  return id;
}

/** A query string from `params`, each value encoded, or sent raw when it is a `RawQuery`. */
export function queryString(params: [string, string | RawQuery][]): string {
  if (params.length === 0) return "";
  return "?" +
    params.map(([name, value]) =>
      `${encode(name)}=${value instanceof RawQuery ? value.text : encode(value)}`
    ).join("&");
}

/** `text` percent-encoded; a lone surrogate (no URL can carry one) becomes U+FFFD first. */
export function encode(text: string): string {
  return encodeURIComponent(text.toWellFormed());
}

/** A query value sent as written (bad percent-encodings). */
export class RawQuery {
  constructor(readonly text: string) {}
}

/** A hostile query value. */
export function hostileQueryValue(prng: Prng): string | RawQuery {
  return prng.weighted<() => string | RawQuery>([
    [4, () => hostileString(prng, { maxString: 70_000 })],
    [2, () => prng.pick(["", "0", "-1", "1e309", "-0", "9007199254740993", "1.5", "0x10", " 1"])],
    [2, () => new RawQuery(prng.pick(["%ZZ", "%C3%28", "%FF", "%00", "%", "a%20b+c", "%E2%82"]))],
    [1, () => prng.pick(PROTOTYPE_NAMES)],
  ])();
}
