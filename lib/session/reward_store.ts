/**
 * A session's reward in KV, under a key of its own: a small payload inline, a large one (the
 * evidence of a big test suite) as a chunked blob under a fresh version. The blob is written
 * first and the record naming it second, in a commit that checks the session record and the
 * previous reward, so a reader never sees a record whose blob is missing and a deleted session
 * never gets a reward back; the replaced blob is deleted after.
 *
 * @module
 */
import { commit, deleteBlob, keys, readBlob, type Store, writeBlob } from "../kv/mod.ts";
import type { RewardPayload, SessionRecord } from "./records.ts";

/**
 * A session's reward as stored under its own key: small payloads inline, larger ones as a
 * chunked blob under a version of their own (written before this record names it).
 */
export interface RewardRecord {
  readonly score: number;
  /** The whole payload, when it is small enough to sit here; `null` when it is a blob. */
  readonly payload: RewardPayload | null;
  /** The blob holding the payload: its version and chunk count; `null` when inline. */
  readonly blob: { readonly version: string; readonly chunks: number } | null;
  readonly setAt: number;
}

/** Tries at reading a large reward while a new one replaces it. */
const READ_TRIES = 4;

/** A session's reward record and versionstamp (`value: null` before any reward). */
export function getRewardRecord(
  kv: Store,
  sessionId: string,
): Promise<Deno.KvEntryMaybe<RewardRecord>> {
  return kv.get<RewardRecord>(keys.reward(sessionId));
}

/**
 * Stores `payload` as the session's reward if neither the session record nor its reward changed
 * since they were read. Resolves to false when one had (nothing is left behind then).
 */
export async function putReward(
  kv: Store,
  session: Deno.KvEntry<SessionRecord>,
  previous: Deno.KvEntryMaybe<RewardRecord>,
  payload: RewardPayload,
  inlineBytes: number,
  now = Date.now(),
): Promise<boolean> {
  const sessionId = session.value.id;
  const bytes = new TextEncoder().encode(JSON.stringify(payload)).length;
  let blob: RewardRecord["blob"] = null;
  if (bytes > inlineBytes) {
    const version = crypto.randomUUID();
    blob = { version, chunks: await writeBlob(kv, keys.rewardBlob(sessionId, version), payload) };
  }
  const record: RewardRecord = {
    score: payload.score,
    payload: blob ? null : payload,
    blob,
    setAt: now,
  };
  const result = await commit(() =>
    kv.atomic().check(session).check(previous).set(keys.reward(sessionId), record)
  );
  const stale = result.ok ? previous.value?.blob : blob;
  if (stale) await deleteBlob(kv, keys.rewardBlob(sessionId, stale.version));
  return result.ok;
}

/** The session's whole reward payload, `null` before any reward. */
export async function readReward(kv: Store, sessionId: string): Promise<RewardPayload | null> {
  for (let attempt = 1;; attempt++) {
    const { value } = await getRewardRecord(kv, sessionId);
    if (!value) return null;
    if (!value.blob) return value.payload;
    try {
      return await readBlob<RewardPayload>(
        kv,
        keys.rewardBlob(sessionId, value.blob.version),
        value.blob.chunks,
      );
    } catch (error) {
      // A newer reward replaced this one and its blob went meanwhile: read the newer one.
      if (attempt >= READ_TRIES) throw error;
    }
  }
}
