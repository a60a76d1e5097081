/**
 * The routes stage (R3; docs/DESIGN.md §7, "Routed experts"): the routed experts the engine
 * reported for a generated turn become its own rows — the positions its chain had not recorded,
 * up to the output's last token but one — checked to cover exactly those. Rows the engine reported
 * again for recorded positions (vLLM always does; SGLang when the gateway asked, for a recompute)
 * are first compared with the last turn's report of them, in one digest: equal, the engine's view
 * has not changed. Else they are compared with the record, span by span through their digests,
 * and a span that differs row by row against its blob: the turn is flagged `routing_mismatch`
 * with the count, and keeps those rows beside its own — once per recompute, so a vLLM chain that
 * moved to another worker stores its recomputed rows once, not every turn. Hashing runs off the
 * event loop: on the engine HTTP worker where the rows were read (their `digest`), else WebCrypto.
 *
 * @module
 */
import type { ChainRoutes, RouteSpan, TurnRoutes } from "../../chain/mod.ts";
import {
  dtypeBytes,
  expertDtype,
  type ExpertRows,
  type ExpertValues,
  type MoeShape,
  RoutesFormatError,
  rowWidth,
} from "../../engine/mod.ts";
import type { Store } from "../../kv/mod.ts";
import { readTurnRoutes } from "../turn_store.ts";

/** A turn's routes as its record names them (less the blob's chunk count) and the blob's bytes. */
export interface SettledRoutes {
  readonly routes: Omit<TurnRoutes, "chunks">;
  /** The own rows, then (when they differ) the recomputed rows of recorded positions. */
  readonly bytes: Uint8Array;
}

/** What the stage reads: the model's shape, and the store for a span whose digest differs. */
export interface RoutesDeps {
  readonly kv: Store;
  readonly moe: MoeShape;
}

/** The turn whose routes are settled. */
export interface RoutedGeneration {
  readonly sessionId: string;
  readonly chainId: string;
  /** Tokens of the prompt the engine read. */
  readonly promptLength: number;
  /** Tokens it sampled. */
  readonly outputLength: number;
  /** What the chain's kept turns recorded. */
  readonly recorded: ChainRoutes;
  /** What the engine reported; `null` or absent: nothing. */
  readonly reported: ExpertRows | null | undefined;
}

/**
 * The turn's own rows, and what the engine's rows for recorded positions say.
 *
 * @throws {RoutesFormatError} when the engine sent no rows, or rows that do not cover the turn's
 * own positions exactly.
 */
export async function settleRoutes(
  deps: RoutesDeps,
  turn: RoutedGeneration,
): Promise<SettledRoutes> {
  const { moe } = deps;
  const reported = turn.reported;
  const end = turn.promptLength + turn.outputLength - 1;
  const own = turn.recorded.recorded;
  if (!reported) {
    throw new RoutesFormatError("The engine answered without the routed experts it was asked for");
  }
  if (reported.start > own || reported.start + reported.rows !== end) {
    throw new RoutesFormatError(
      `The engine's routed experts cover positions ${reported.start} to ${
        reported.start + reported.rows
      }, not ${own} to ${end}`,
    );
  }
  const width = rowWidth(moe);
  const dtype = expertDtype(moe);
  const size = dtypeBytes(dtype);
  const bytes = asBytes(reported.values);
  const ownBytes = bytes.subarray((own - reported.start) * width * size);
  const base: Omit<TurnRoutes, "chunks"> = {
    start: own,
    rows: end - own,
    width,
    dtype,
    // The rows' digest when they were hashed where they were read (the engine HTTP worker).
    digest: reported.start === own && reported.digest !== undefined
      ? reported.digest
      : await sha256Hex(ownBytes),
  };
  if (reported.start === own) return { routes: base, bytes: ownBytes };
  // Rows for recorded positions too: the engine's view of them, first compared with its last.
  const routes = {
    ...base,
    reported: { start: reported.start, digest: reported.digest ?? await sha256Hex(bytes) },
  };
  const again = bytes.subarray(0, (own - reported.start) * width * size);
  const last = turn.recorded.lastReport;
  if (
    last?.start === reported.start && last.end === own && await sha256Hex(again) === last.digest
  ) {
    return { routes, bytes: ownBytes };
  }
  const mismatched = await differingRows(deps, turn, reported.start, again);
  if (mismatched === 0) return { routes, bytes: ownBytes };
  return {
    routes: { ...routes, mismatched, recomputedFrom: reported.start },
    bytes: concat(ownBytes, again),
  };
}

/**
 * Rows of `again` (the engine's rows for recorded positions from `from`) that differ from the
 * chain's record: each recorded span it covers whole is compared by digest first, and read only
 * when that differs; a span it covers in part is read.
 */
async function differingRows(
  deps: RoutesDeps,
  turn: RoutedGeneration,
  from: number,
  again: Uint8Array,
): Promise<number> {
  const rowBytes = rowWidth(deps.moe) * dtypeBytes(expertDtype(deps.moe));
  let differing = 0;
  let covered = from;
  for (const span of turn.recorded.spans) {
    const lo = Math.max(span.start, covered);
    const hi = Math.min(span.start + span.rows, turn.recorded.recorded);
    if (hi <= lo) continue;
    const slice = again.subarray((lo - from) * rowBytes, (hi - from) * rowBytes);
    covered = hi;
    const whole = lo === span.start && hi === span.start + span.rows;
    if (whole && await sha256Hex(slice) === span.digest) continue;
    const recorded = await spanRows(deps, turn, span);
    differing += countDiffering(
      recorded.subarray((lo - span.start) * rowBytes, (hi - span.start) * rowBytes),
      slice,
      rowBytes,
    );
  }
  return differing;
}

/** A recorded span's own rows, as bytes. */
async function spanRows(
  deps: RoutesDeps,
  turn: RoutedGeneration,
  span: RouteSpan,
): Promise<Uint8Array> {
  const rows = await readTurnRoutes(deps.kv, turn.sessionId, turn.chainId, span);
  return asBytes(rows.values);
}

/** Rows of `rowBytes` bytes at which `a` and `b` differ. */
function countDiffering(a: Uint8Array, b: Uint8Array, rowBytes: number): number {
  let count = 0;
  for (let at = 0; at < a.length; at += rowBytes) {
    for (let i = at; i < at + rowBytes; i++) {
      if (a[i] !== b[i]) {
        count++;
        break;
      }
    }
  }
  return count;
}

/** The bytes of a typed array, not copied. */
export function asBytes(values: ExpertValues): Uint8Array {
  return new Uint8Array(values.buffer, values.byteOffset, values.byteLength);
}

function concat(a: Uint8Array, b: Uint8Array): Uint8Array {
  const out = new Uint8Array(a.length + b.length);
  out.set(a);
  out.set(b, a.length);
  return out;
}

/** SHA-256 of `bytes` as hex, by WebCrypto (off the event loop). */
async function sha256Hex(bytes: Uint8Array): Promise<string> {
  const digest = new Uint8Array(
    await crypto.subtle.digest("SHA-256", bytes as Uint8Array<ArrayBuffer>),
  );
  return Array.from(digest, (byte) => byte.toString(16).padStart(2, "0")).join("");
}
