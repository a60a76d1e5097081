/**
 * Sessions: one agent episode each, reached by a bearer token `<session id>.<secret>`. The
 * token is shown once, when the session opens; KV keeps only its SHA-256.
 *
 * @module
 */
import { createHash } from "node:crypto";
import { createSession, getSession } from "./session_store.ts";
import { checkMetadata } from "../limits/mod.ts";
import {
  AuthenticationError,
  InvalidSessionIdError,
  SessionExistsError,
  SessionNotFoundError,
} from "./errors.ts";
import { sameSecret } from "../timing/mod.ts";
import type { SessionRecord } from "./records.ts";
import type { Store } from "../kv/mod.ts";

/** Session ids: letters, digits, `_` and `-`, up to 128 characters. */
export const SESSION_ID = /^[A-Za-z0-9_-]{1,128}$/;

/** SHA-256 of a token, hex: what KV stores in its place. */
export function tokenDigest(token: string): string {
  return createHash("sha256").update(token).digest("hex");
}

/** A fresh session's record and the bearer token that opens it. */
export interface OpenedSession {
  readonly session: SessionRecord;
  readonly token: string;
}

/**
 * Opens a session. Without an id one is generated.
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { openSession } from "./session.ts";
 * const kv = await Deno.openKv(":memory:");
 * const { session, token } = await openSession(kv, { metadata: { task: "t1" } });
 * assert.equal(session.status, "open");
 * assert.ok(token.length > 0); // the agent sends `token` as its API key
 * kv.close();
 * ```
 * @throws {SessionExistsError} when `id` is taken; {LimitError} for metadata over its bounds.
 */
export async function openSession(
  kv: Store,
  options: {
    id?: string;
    metadata?: Record<string, unknown>;
    /** How this session's reward is shared among its segments (else the gateway's default). */
    allocation?: SessionRecord["allocation"];
    /** Each turn keeps its request messages beside its tokens. */
    recordMessages?: boolean;
    now?: number;
  } = {},
): Promise<OpenedSession> {
  const id = options.id ?? `sess_${randomHex(12)}`;
  if (!SESSION_ID.test(id)) {
    throw new InvalidSessionIdError(id);
  }
  checkMetadata(options.metadata ?? {});
  const token = `${id}.${randomHex(24)}`;
  const session: SessionRecord = {
    ...newSessionRecord(id, token, options.metadata ?? {}, false, options.now),
    allocation: options.allocation ?? null,
    ...(options.recordMessages ? { recordMessages: true } : {}),
  };
  if (!(await createSession(kv, session))) throw new SessionExistsError(id);
  return { session, token };
}

/** How a token was resolved: an existing session, or one to open on first use. */
export type TokenResolution =
  | {
    readonly kind: "session";
    readonly session: SessionRecord;
    readonly entry: Deno.KvEntry<SessionRecord>;
  }
  | { readonly kind: "open"; readonly session: SessionRecord };

/**
 * Finds the session a bearer token opens. With `devOpenSessions`, an unknown token resolves to
 * a session to open on first use (its id is the token when the token is a valid id); nothing is
 * written here, so a request that then fails validation leaves KV unchanged.
 *
 * @throws {AuthenticationError} for a missing, malformed or wrong token.
 * @throws {SessionNotFoundError} for a well-formed token naming an unknown session.
 */
export async function resolveToken(
  kv: Store,
  token: string | null,
  options: { devOpenSessions: boolean; now?: number },
): Promise<TokenResolution> {
  if (!token) {
    throw new AuthenticationError(
      "Missing session token: send it as x-api-key or as Authorization: Bearer",
    );
  }
  const dot = token.lastIndexOf(".");
  const named = dot > 0 ? token.slice(0, dot) : token;
  const entry = SESSION_ID.test(named) ? await getSession(kv, named) : null;
  if (entry?.value) {
    if (!sameSecret(entry.value.tokenDigest, tokenDigest(token))) {
      throw new AuthenticationError("Invalid session token");
    }
    return { kind: "session", session: entry.value, entry: entry as Deno.KvEntry<SessionRecord> };
  }
  if (!options.devOpenSessions) {
    if (dot > 0 && SESSION_ID.test(named)) throw new SessionNotFoundError(named);
    throw new AuthenticationError("Invalid session token");
  }
  const id = SESSION_ID.test(token) && token.length <= 64
    ? token
    : `dev_${tokenDigest(token).slice(0, 24)}`;
  if (id !== named) {
    const existing = await getSession(kv, id);
    if (existing.value) {
      if (!sameSecret(existing.value.tokenDigest, tokenDigest(token))) {
        throw new AuthenticationError("Invalid session token");
      }
      return {
        kind: "session",
        session: existing.value,
        entry: existing as Deno.KvEntry<SessionRecord>,
      };
    }
  }
  return { kind: "open", session: newSessionRecord(id, token, {}, true, options.now) };
}

/**
 * Stores a session resolved with `kind: "open"`; a concurrent first use of the same token
 * finds the session already there, which is fine.
 */
export async function storeOpenedSession(kv: Store, session: SessionRecord): Promise<void> {
  await createSession(kv, session);
}

function newSessionRecord(
  id: string,
  token: string,
  metadata: Record<string, unknown>,
  dev: boolean,
  now = Date.now(),
): SessionRecord {
  return {
    id,
    tokenDigest: tokenDigest(token),
    status: "open",
    createdAt: now,
    closedAt: null,
    expiresAt: null,
    metadata,
    allocation: null,
    chainCount: 0,
    mainChain: "c0",
    dev,
  };
}

function randomHex(bytes: number): string {
  return Array.from(
    crypto.getRandomValues(new Uint8Array(bytes)),
    (b) => b.toString(16).padStart(2, "0"),
  )
    .join("");
}
