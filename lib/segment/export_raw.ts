/**
 * The raw record of a session: every chain and every turn it ever recorded, discarded ones
 * included and marked, with each turn's own tokens. For audits and debugging, not training.
 *
 * Its chains and turns are the stored records with their keys in snake_case, as every other
 * answer of the API (`bodyDigest` → `body_digest`, `timings.renderMs` → `timings.render_ms`);
 * their values are as stored (times in epoch milliseconds). A turn's `request` is canonical chat
 * messages, already in the API's shape: its keys, tool schemas included, are left as they are.
 *
 * @module
 */
import type { ChainHeader, TurnImage, TurnMessages, TurnRecord } from "../chain/mod.ts";
import {
  listChains,
  liveTurns,
  readAllTurns,
  readSessionSummary,
  readTurnMessages,
  readTurnTokens,
  type SessionSummary,
} from "../session/mod.ts";
import type { Store } from "../kv/mod.ts";

/** A camelCase name in snake_case: `bodyDigest` → `body_digest`. */
export type SnakeCase<S extends string> = S extends `${infer C}${infer Rest}`
  ? `${C extends Lowercase<C> ? C : `_${Lowercase<C>}`}${SnakeCase<Rest>}`
  : S;

/** `T` with its own keys in snake_case (not its values'). */
export type SnakeKeys<T> = { [K in keyof T as K extends string ? SnakeCase<K> : K]: T[K] };

/** A turn's record as the raw export shows it: the stored record with snake_case keys. */
export type RawTurnRecord =
  & SnakeKeys<Omit<TurnRecord, "timings" | "images">>
  & {
    readonly timings: SnakeKeys<TurnRecord["timings"]>;
    /** The images its delta added (`media_type`, …); absent when it added none. */
    readonly images?: readonly SnakeKeys<TurnImage>[];
  };

/** One turn as the raw export shows it: its record, with its tokens. */
export type RawTurn =
  & RawTurnRecord
  & {
    /**
     * What its request added, as canonical messages (the tools too on a chain's first turn),
     * when the session records them (`record_messages`); else absent.
     */
    readonly request?: TurnMessages;
    /** True when a rewind took it off the chain: it never reaches a training sample. */
    readonly discarded: boolean;
    readonly tokens: {
      readonly delta: number[];
      readonly output: number[];
      readonly logprobs: number[];
      readonly closing: number[];
    };
  };

/** One chain as the raw export shows it: its header, snake_case, and its turns. */
export type RawChain = SnakeKeys<ChainHeader> & { readonly turns: RawTurn[] };

/**
 * A session's raw record: its summary, and its chains' heads and turns as recorded. The `raw`
 * export shows the summary as the trainer API shows the session.
 */
export interface RawRecord {
  readonly session: SessionSummary;
  readonly chains: RawChain[];
}

/**
 * Reads the raw record of a session.
 *
 * @throws {SessionNotFoundError}
 */
export async function rawRecord(kv: Store, sessionId: string): Promise<RawRecord> {
  const session = await readSessionSummary(kv, sessionId);
  const chains: RawChain[] = [];
  for (const header of await listChains(kv, sessionId)) {
    const all = await readAllTurns(kv, sessionId, header.id);
    const live = new Set(liveTurns(all, header).map((turn) => turn.rid));
    const turns: RawTurn[] = [];
    for (const record of all) {
      const tokens = await readTurnTokens(kv, sessionId, header.id, record);
      const request = await readTurnMessages(kv, sessionId, header.id, record);
      turns.push({
        ...rawTurnRecord(record),
        ...(request ? { request } : {}),
        discarded: !live.has(record.rid),
        tokens: {
          delta: [...tokens.delta],
          output: [...tokens.output],
          logprobs: [...tokens.logprobs],
          closing: [...tokens.closing],
        },
      });
    }
    chains.push({ ...snakeKeys(header), turns });
  }
  return { session, chains };
}

/**
 * A turn's record as the raw export shows it: every key snake_case, its timings' and images'
 * too (a version span's are already).
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import type { TurnRecord } from "../chain/mod.ts";
 * import { rawTurnRecord } from "./export_raw.ts";
 * const record = {
 *   inputLen: 12,
 *   timings: { renderMs: 1, engineMs: 20, engineReportedMs: 18, totalMs: 22 },
 * } as unknown as TurnRecord;
 * assert.deepEqual(rawTurnRecord(record), {
 *   input_len: 12,
 *   timings: { render_ms: 1, engine_ms: 20, engine_reported_ms: 18, total_ms: 22 },
 * });
 * ```
 */
export function rawTurnRecord(record: TurnRecord): RawTurnRecord {
  // Keys keep their places: the nested objects replace their own values.
  const raw: Record<string, unknown> = snakeKeys(record);
  if (record.timings) raw.timings = snakeKeys(record.timings);
  if (record.images) raw.images = record.images.map(snakeKeys);
  return raw as RawTurnRecord;
}

/** `value` with its own keys in snake_case, in their order. */
function snakeKeys<T extends object>(value: T): SnakeKeys<T> {
  return Object.fromEntries(
    Object.entries(value).map((
      [key, v],
    ) => [key.replace(/[A-Z]/g, (c) => `_${c.toLowerCase()}`), v]),
  ) as SnakeKeys<T>;
}
