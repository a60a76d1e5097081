/**
 * What a chain has recorded of routed experts (R3): its live turns' own rows, and how far from
 * position 0 they cover the chain without a gap — where the next turn's own rows begin.
 *
 * @module
 */
import type { RouteSpan, TurnRecord } from "./records.ts";

/** A chain's recorded rows: their spans, turn by turn, and the positions they cover from 0. */
export interface ChainRoutes {
  /** Positions `0 .. recorded` have a recorded row. */
  readonly recorded: number;
  readonly spans: readonly RouteSpan[];
  /**
   * The last turn's whole report, when it reported recorded positions too: the positions it
   * covered and the digest of its rows.
   */
  readonly lastReport?: { readonly start: number; readonly end: number; readonly digest: string };
}

/** A chain with nothing recorded. */
export const NO_ROUTES: ChainRoutes = { recorded: 0, spans: [] };

/**
 * The rows `turns` (a chain's live turns, first to last) recorded.
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { chainRoutes } from "./route_spans.ts";
 * import type { TurnRecord } from "./records.ts";
 * const turn = (index: number, start: number, rows: number) =>
 *   ({ index, rid: `r${index}`, routes: { start, rows, digest: "d" } }) as unknown as TurnRecord;
 * assert.equal(chainRoutes([turn(0, 0, 10), turn(1, 10, 5)]).recorded, 15);
 * ```
 */
export function chainRoutes(turns: readonly TurnRecord[]): ChainRoutes {
  let routes = NO_ROUTES;
  for (const turn of turns) routes = withTurn(routes, turn);
  return routes;
}

/** `routes` once `turn` is recorded after them. */
export function withTurn(routes: ChainRoutes, turn: TurnRecord): ChainRoutes {
  const own = turn.routes;
  if (!own) return routes;
  const { start, rows, width, dtype, digest, chunks } = own;
  const span: RouteSpan = {
    index: turn.index,
    rid: turn.rid,
    start,
    rows,
    width,
    dtype,
    digest,
    chunks,
  };
  const recorded = own.start <= routes.recorded
    ? Math.max(routes.recorded, own.start + own.rows)
    : routes.recorded;
  const report = own.reported;
  return {
    recorded,
    spans: [...routes.spans, span],
    ...(report
      ? { lastReport: { start: report.start, end: own.start + own.rows, digest: report.digest } }
      : {}),
  };
}
