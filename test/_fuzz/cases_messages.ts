/**
 * Fuzzed requests of the agent's surface: `POST /v1/messages` (JSON and SSE),
 * `POST /v1/messages/count_tokens`, `GET /v1/models`, `HEAD|GET /api/hello`. Bases are a few
 * hand-written conversations, samples of the zod schemas, and the requests the real Claude Code
 * CLI sent (fixtures/claude_code/*.json) with their real headers.
 *
 * @module
 */
import { MessageCountTokensParams, MessageCreateParams } from "../../lib/anthropic/mod.ts";
import {
  bodiless,
  bodyBytes,
  contentType,
  credentials,
  type FuzzCase,
  type FuzzWorld,
  liveSession,
} from "./case.ts";
import { sampleOf } from "./from_schema.ts";
import { deep, hostileString, longString, PROTOTYPE_NAMES, prototypeObject } from "./hostile.ts";
import { cloneJson, preview } from "./json_text.ts";
import { CONVERSATIONS, ODD_BLOCKS, type RecordedRequest } from "./message_bases.ts";
import { describe, mutate } from "./mutate.ts";
import type { Prng } from "./prng.ts";

/** Values planted where the brief names them: content, tool input, metadata, system, model. */
const PLANT_PATHS = [
  ["messages", 0, "content"],
  ["system"],
  ["model"],
  ["metadata"],
  ["tools"],
  ["tool_choice"],
  ["max_tokens"],
  ["messages"],
] as const;

/** A `POST /v1/messages` or `/v1/messages/count_tokens` case. */
export function messagesCase(
  prng: Prng,
  world: FuzzWorld,
  recorded: readonly RecordedRequest[],
  route: "create" | "count",
): FuzzCase {
  const notes: string[] = [];
  let headers: Record<string, string> = {};
  let base: unknown;
  const schema = route === "create" ? MessageCreateParams : MessageCountTokensParams;
  const source = prng.weighted([[55, "conversation"], [25, "schema"], [12, "recorded"]]);
  if (source === "recorded") {
    const request = prng.pick(recorded);
    headers = { ...request.headers };
    base = cloneJson(request.body);
    notes.push(
      `base: recorded Claude Code request (${request.headers["x-claude-code-agent-id"] ?? "main"})`,
    );
  } else if (source === "schema") {
    base = sampleOf(schema, prng);
    notes.push("base: sample of the zod schema");
  } else {
    base = cloneJson(prng.pick(CONVERSATIONS));
    notes.push("base: hand-written conversation");
  }
  if (source !== "recorded" && prng.chance(0.3)) {
    headers = { ...prng.pick(recorded).headers };
    notes.push("headers of a recorded Claude Code request");
  }
  const object = base as Record<string, unknown>;
  const messages = object.messages;
  if (Array.isArray(messages) && messages.length > 0 && prng.chance(0.1)) {
    const message = prng.pick(messages) as Record<string, unknown>;
    const odd = cloneJson(prng.pick(ODD_BLOCKS));
    const content = Array.isArray(message.content)
      ? message.content
      : [{ type: "text", text: String(message.content) }];
    content.splice(prng.int(content.length + 1), 0, odd);
    message.content = content;
    notes.push(`odd block in a ${message.role} message: ${JSON.stringify(odd).slice(0, 100)}`);
  }
  if (route === "create") object.stream = prng.chance(0.5);
  else delete object.stream;
  const value = corrupt(prng, object, PLANT_PATHS, notes);
  const session = liveSession(prng, world);
  headers = {
    ...headers,
    ...agentHeaders(prng, notes),
    ...credentials(prng, world, session.token, notes),
    ...contentType(prng, notes),
  };
  const path = route === "create"
    ? prng.pick(["/v1/messages", "/v1/messages?beta=true", "/v1/messages?beta=%ZZ&beta=1"])
    : "/v1/messages/count_tokens";
  return {
    index: 0,
    endpoint: route === "create" ? "POST /v1/messages" : "POST /v1/messages/count_tokens",
    method: "POST",
    path,
    headers,
    body: bodyBytes(prng, world, value, notes),
    notes,
  };
}

/**
 * The last turn that was answered, sent again: as Claude Code retries (same body, retry count
 * 0 or more), or as a stream where it was JSON.
 */
export function retryCase(prng: Prng, world: FuzzWorld): FuzzCase | null {
  const last = world.lastTurn;
  if (last === null) return null;
  const headers = { ...last.headers };
  const retry = prng.pick(["0", "1", "2", "-1", "1e309", "constructor"]);
  headers["x-stainless-retry-count"] = retry;
  let body = last.body;
  const flip = prng.chance(0.3);
  if (flip && body !== null) {
    const parsed = JSON.parse(new TextDecoder().decode(body));
    parsed.stream = !parsed.stream;
    body = new TextEncoder().encode(JSON.stringify(parsed));
  }
  const notes = [`retry of case ${last.index} (x-stainless-retry-count: ${retry})`];
  if (flip) notes.push("stream flipped");
  return { ...last, index: 0, headers, body, notes: [...notes, ...last.notes] };
}

/** `GET /v1/models` or `HEAD|GET /api/hello`. */
export function probeCase(prng: Prng, world: FuzzWorld, route: "models" | "hello"): FuzzCase {
  const notes: string[] = [];
  const session = liveSession(prng, world);
  const right = prng.chance(0.3) ? world.adminToken : session.token;
  const headers = { ...credentials(prng, world, right, notes), ...agentHeaders(prng, notes) };
  if (route === "models") {
    return bodiless("GET /v1/models", "/v1/models", headers, notes);
  }
  const method = prng.pick(["HEAD", "GET"]);
  return bodiless(`${method} /api/hello`, "/api/hello", headers, notes);
}

/** Claude Code's routing and retry headers, hostile some of the time. */
function agentHeaders(prng: Prng, notes: string[]): Record<string, string> {
  const headers: Record<string, string> = {};
  const names = [
    "x-claude-code-agent-id",
    "x-claude-code-parent-agent-id",
    "x-claude-code-session-id",
    "x-stainless-retry-count",
    "anthropic-beta",
    "anthropic-version",
  ];
  for (const name of names) {
    if (!prng.chance(0.12)) continue;
    const value = headerValue(
      prng.weighted<() => string>([
        [4, () => prng.pick(PROTOTYPE_NAMES)],
        [2, () => hostileString(prng, { maxString: 70_000 })],
        [2, () => prng.pick(["-1", "1e309", "NaN", "99999999999999999999", "1", "0", ""])],
        [1, () => "\xff\xfe\xc3(\x80"],
        [1, () => "a".repeat(prng.pick([256, 257, 8_000]))],
      ])(),
    );
    headers[name] = value;
    notes.push(`header ${name}: ${JSON.stringify(preview(value, 60))}`);
  }
  return headers;
}

/** `text` as a header value can carry it: no CR, LF or NUL, no character past U+00FF. */
function headerValue(text: string): string {
  const safe = Array.from(text, (char) => {
    const code = char.codePointAt(0)!;
    return code === 13 || code === 10 || code === 0 ? " " : code > 0xff ? "?" : char;
  });
  return safe.join("").trim();
}

/**
 * A body made hostile: sometimes a hostile value planted at one of `paths`, usually mutated
 * (each step noted); `object` itself may be changed.
 */
export function corrupt(
  prng: Prng,
  object: Record<string, unknown>,
  paths: readonly (readonly (string | number)[])[],
  notes: string[],
): unknown {
  if (prng.chance(0.15)) {
    const path = prng.pick(paths);
    const planted = prng.weighted<() => unknown>([
      [2, () => deep(prng)],
      [2, () => prototypeObject(prng, { maxString: 70_000 })],
      [2, () => hostileString(prng, { maxString: 70_000 })],
      [1, () => longString(prng, 65_537)],
    ])();
    plant(object, path, planted);
    notes.push(`plant ${path.join(".")} = ${describe(planted)}`);
  }
  if (!prng.chance(0.8)) return object;
  const mutated = mutate(prng, object, { maxString: 70_000 });
  notes.push(...mutated.notes);
  return mutated.value;
}

/** Puts `value` at `path` in `object`, when the path's parents are objects. */
function plant(
  object: Record<string, unknown>,
  path: readonly (string | number)[],
  value: unknown,
) {
  let at: Record<string | number, unknown> = object;
  for (const key of path.slice(0, -1)) {
    if (typeof at[key] !== "object" || at[key] === null) return;
    at = at[key] as Record<string | number, unknown>;
  }
  at[path[path.length - 1]] = value;
}
