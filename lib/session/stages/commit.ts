/**
 * The commit stage (docs/DESIGN.md §6.2): the turn's new images are written first (kept by digest
 * for the session, whichever turn committed them); then the record, its token chunks, its other
 * blobs (its request's messages when the session keeps them, its routed experts), its replay
 * entry and the chain's new head in one atomic commit checked against the head as routed on and
 * the chain's lease as last renewed, which the commit deletes. Chunks too many for that commit go
 * ahead of it under keys nothing references until it lands (`commitTurn`).
 *
 * @module
 */
import { type HeldLease, keys, type Store } from "../../kv/mod.ts";
import type { GatewayMetrics } from "../../metrics/mod.ts";
import { ChainConflictError } from "../errors.ts";
import { writeImages } from "../image_store.ts";
import type { ChainRoute } from "../routed_turn.ts";
import { commitTurn } from "../turn_store.ts";
import type { TurnCommitRecord } from "./build_record.ts";

/** What committing writes to, and counts its retries in. */
export interface CommitDeps {
  readonly kv: Store;
  readonly metrics?: GatewayMetrics;
}

/**
 * Writes the turn's blobs, then commits it under the chain's lease, and resolves to the head's
 * new versionstamp; the lease is gone with the commit.
 *
 * @throws {ChainConflictError} when the chain or its lease moved on since the turn was routed.
 */
export async function commitRecord(
  deps: CommitDeps,
  route: ChainRoute,
  lease: HeldLease,
  record: TurnCommitRecord,
): Promise<string> {
  const { sessionId, chainId, prompt } = route;
  const { turn } = record;
  // The turn's new images, for the exports: written before the commit, like the turn's chunks.
  if (prompt.newImages.length > 0) {
    await writeImages(deps.kv, sessionId, prompt.newImages, prompt.imageData);
  }
  const blobs = [];
  if (record.messageChunks) {
    blobs.push({
      prefix: keys.turnMessages(sessionId, chainId, turn.index, turn.rid),
      chunks: record.messageChunks,
    });
  }
  if (record.routeChunks) {
    blobs.push({
      prefix: keys.turnRoutes(sessionId, chainId, turn.index, turn.rid),
      chunks: record.routeChunks,
    });
  }
  await lease.pause();
  const versionstamp = await commitTurn(deps.kv, {
    chain: route.chain,
    header: record.header,
    turn,
    chunks: record.chunks,
    blobs,
    lease: lease.entry,
    metrics: deps.metrics,
  });
  if (versionstamp === null) throw new ChainConflictError(sessionId, chainId);
  lease.released(); // the commit deleted it
  return versionstamp;
}
