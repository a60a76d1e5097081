/**
 * A segment's routed experts as a trainer replays them (R3; docs/trainers.md "Routed experts"):
 * one row for every token of `prompt_ids ++ response_ids` but the last (slime's
 * `rollout_routed_experts`, `len(tokens) - 1` rows), or for every token (verl's layout), each row
 * `layers × top_k` expert ids, in int16 (int32 for a model of more experts), served as a `.npy`.
 *
 * Which rows: for each position, the row the engine reported when it first forwarded it — the
 * turn that recorded the position. A later turn that recomputed a recorded prefix (a failover, a
 * resend outside an engine session, a rewind) and was routed differently keeps its rows in its
 * own record and is flagged `routing_mismatch`; the export does not take them, since every token
 * sampled before the recompute was sampled after a forward routed as first recorded (and slime's
 * own `routed_experts_start_len` concatenation keeps the existing rows the same way). A position
 * no engine forwarded — the closing token of a segment whose last turn was cut by `max_tokens`,
 * and in the verl layout the last token — is `-1`, the do-not-replay value.
 *
 * Rows are read turn by turn and sent as they are read: a segment's routes are never held whole,
 * but by the prefix tree's export, which compares them (`segmentRouteValues`).
 *
 * @module
 */
import type { TurnRecord } from "../chain/mod.ts";
import {
  dtypeBytes,
  type ExpertDtype,
  expertValues,
  type MoeShape,
  npyHeader,
  rowWidth,
} from "../engine/mod.ts";
import type { CodedError } from "../errors/mod.ts";
import type { Store } from "../kv/mod.ts";
import type { TrainingSegment } from "./allocate_reward.ts";
import {
  ChainNotFoundError,
  getChain,
  liveSession,
  readLiveTurns,
  readTurnRoutes,
} from "../session/mod.ts";

/** How a segment's rows are laid out: slime's (`len(tokens) - 1` rows) or verl's (one a token). */
export type RoutesLayout = "slime" | "verl";

/** The `.npy` a segment's routes are exported as, as every export names it. */
export interface ExportedRoutes {
  /** `/sessions/<id>/routes/<chain>`, on the trainer surface (admin token); `?layout=verl`. */
  readonly url: string;
  /** `[rows, layers, top_k]`. */
  readonly shape: readonly [number, number, number];
  readonly dtype: "int16" | "int32";
  readonly layout: RoutesLayout;
  /** Rows no engine forwarded (all `-1`). */
  readonly missing_rows: number;
  /** Turns whose engine reported other rows for positions already recorded (`routing_mismatch`). */
  readonly mismatched_turns: number;
}

/** The signed type the export's ids (and `-1`) fit in. */
export function exportDtype(shape: Pick<MoeShape, "experts">): "int16" | "int32" {
  return shape.experts <= 0x7fff ? "int16" : "int32";
}

/** The rows a segment of `tokens` tokens has in `layout`. */
function rowCount(tokens: number, layout: RoutesLayout): number {
  return layout === "verl" ? tokens : Math.max(0, tokens - 1);
}

/**
 * Positions with a recorded row among the first `rows`, turn by turn: each turn's own rows past
 * what the turns before it covered.
 */
function coverage(turns: readonly TurnRecord[], rows: number): { from: number; to: number }[] {
  const spans: { from: number; to: number }[] = [];
  let covered = 0;
  for (const turn of turns) {
    const own = turn.routes;
    if (!own) continue;
    const from = Math.max(own.start, covered);
    const to = Math.min(own.start + own.rows, rows);
    if (to > from) spans.push({ from, to });
    covered = Math.max(covered, to);
  }
  return spans;
}

/**
 * What an export says of a segment's routes, or `null` when the segment recorded none (or the
 * gateway does not know the model's shape).
 */
export function exportedRoutes(
  sessionId: string,
  chainId: string,
  turns: readonly TurnRecord[],
  tokens: number,
  shape: MoeShape | undefined,
  layout: RoutesLayout = "slime",
): ExportedRoutes | null {
  if (!shape || !turns.some((turn) => turn.routes)) return null;
  const rows = rowCount(tokens, layout);
  const covered = coverage(turns, rows).reduce((n, span) => n + span.to - span.from, 0);
  const query = layout === "verl" ? "?layout=verl" : "";
  return {
    url: `/sessions/${encodeURIComponent(sessionId)}/routes/${encodeURIComponent(chainId)}${query}`,
    shape: [rows, shape.layers, shape.topK],
    dtype: exportDtype(shape),
    layout,
    missing_rows: rows - covered,
    mismatched_turns: turns.filter((turn) => turn.routes?.mismatched).length,
  };
}

/**
 * A segment's routes as the bytes of a `.npy` file, in pieces: the header, then the rows turn by
 * turn (`-1` where no row was recorded).
 *
 * @throws {Error} when a turn's blob is missing (a broken chain).
 */
export async function* segmentRoutesNpy(
  kv: Store,
  sessionId: string,
  chainId: string,
  turns: readonly TurnRecord[],
  tokens: number,
  shape: MoeShape,
  layout: RoutesLayout = "slime",
): AsyncGenerator<Uint8Array> {
  const rows = rowCount(tokens, layout);
  const dtype: ExpertDtype = exportDtype(shape);
  const width = rowWidth(shape);
  yield npyHeader(dtype, [rows, shape.layers, shape.topK]);
  const missing = (count: number) => {
    const values = expertValues(dtype, count * width);
    values.fill(-1);
    return bytesOf(values);
  };
  let at = 0;
  for (const turn of turns) {
    const own = turn.routes;
    if (!own) continue;
    const from = Math.max(own.start, at);
    const to = Math.min(own.start + own.rows, rows);
    if (to <= from) continue;
    if (from > at) yield missing(from - at);
    const read = await readTurnRoutes(kv, sessionId, chainId, {
      index: turn.index,
      rid: turn.rid,
      ...own,
    });
    const values = expertValues(dtype, (to - from) * width);
    values.set(read.values.subarray((from - own.start) * width, (to - own.start) * width));
    yield bytesOf(values);
    at = to;
  }
  if (rows > at) yield missing(rows - at);
}

/**
 * A segment's routes in slime's layout as one array of values (row `p` the experts of position
 * `p`, `-1` where no row was recorded), what the prefix tree compares (`format=tree`); `null`
 * when the segment recorded none. Read off the turn path, for an export.
 *
 * @throws {Error} when a turn's blob is missing (a broken chain).
 */
export async function segmentRouteValues(
  kv: Store,
  sessionId: string,
  segment: Pick<TrainingSegment, "header" | "turns" | "arrays">,
  shape: MoeShape | undefined,
): Promise<{ values: Int16Array | Int32Array; width: number } | null> {
  if (!shape || !segment.turns.some((turn) => turn.routes)) return null;
  const tokens = segment.arrays.prompt_ids.length + segment.arrays.response_ids.length;
  const dtype = exportDtype(shape);
  const width = rowWidth(shape);
  const values = expertValues(dtype, rowCount(tokens, "slime") * width) as Int16Array | Int32Array;
  const bytes = new Uint8Array(values.buffer, values.byteOffset, values.byteLength);
  const pieces = segmentRoutesNpy(kv, sessionId, segment.header.id, segment.turns, tokens, shape);
  await pieces.next(); // the header
  let at = 0;
  for await (const piece of pieces) {
    bytes.set(piece, at);
    at += piece.length;
  }
  return { values, width };
}

/** Bytes of a `.npy` of a segment's routes: its header and rows. */
export function routesNpyBytes(
  rows: number,
  shape: Pick<MoeShape, "layers" | "topK" | "experts">,
): number {
  return npyHeader(exportDtype(shape), [rows, shape.layers, shape.topK]).length +
    rows * rowWidth(shape) * dtypeBytes(exportDtype(shape));
}

function bytesOf(values: { buffer: ArrayBufferLike; byteOffset: number; byteLength: number }) {
  return new Uint8Array(values.buffer, values.byteOffset, values.byteLength);
}

/** A chain recorded no routed experts, or the gateway does not record them (HTTP 404). */
export class RoutesNotFoundError extends Error implements CodedError {
  readonly code = "routes_not_found" as const;
  constructor(message: string) {
    super(message);
    this.name = "RoutesNotFoundError";
  }
}

/** A chain's routes as a `.npy`: its size in bytes and its pieces. */
export interface RoutesFile {
  readonly bytes: number;
  readonly pieces: AsyncGenerator<Uint8Array>;
}

/**
 * The routes of chain `chainId` (its live turns, as its segment holds them) as a `.npy` in
 * `layout`.
 *
 * @throws {SessionNotFoundError}, {ChainNotFoundError}, {RoutesNotFoundError}
 */
export async function chainRoutesFile(
  kv: Store,
  sessionId: string,
  chainId: string,
  moe: MoeShape | undefined,
  layout: RoutesLayout,
): Promise<RoutesFile> {
  await liveSession(kv, sessionId);
  const header = (await getChain(kv, sessionId, chainId)).value;
  if (!header) throw new ChainNotFoundError(sessionId, chainId);
  if (!moe) {
    throw new RoutesNotFoundError(
      "This gateway records no routed experts (ROUTED_EXPERTS is off)",
    );
  }
  const turns = await readLiveTurns(kv, header);
  if (!turns.some((turn) => turn.routes)) {
    throw new RoutesNotFoundError(`Chain "${chainId}" recorded no routed experts`);
  }
  const rows = rowCount(header.tokenCount, layout);
  return {
    bytes: routesNpyBytes(rows, moe),
    pieces: segmentRoutesNpy(kv, sessionId, chainId, turns, header.tokenCount, moe, layout),
  };
}
