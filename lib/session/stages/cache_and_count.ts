/**
 * The last stage of a generated turn: the chain as just committed is cached in this process at
 * its new versionstamp — its tokens as the next prompt starts with them, and the identities of
 * the conversation they render, the reply's included (T4) — and the turn is counted.
 *
 * @module
 */
import { withTurn } from "../../chain/mod.ts";
import type { ChainCache } from "../../kv/mod.ts";
import type { GatewayMetrics } from "../../metrics/mod.ts";
import type { ChainRoute } from "../routed_turn.ts";
import { type CachedChain, cacheKey } from "../route_snapshot.ts";
import type { TurnCommitRecord } from "./build_record.ts";
import type { SettledOutput } from "./settle_output.ts";

/** Where the chain is cached and the turn counted. */
export interface CacheDeps {
  readonly cache: ChainCache<CachedChain>;
  readonly metrics?: GatewayMetrics;
}

/** A committed turn, as the cache and the counters need it. */
export interface CommittedTurn {
  readonly route: ChainRoute;
  readonly settled: SettledOutput;
  readonly record: TurnCommitRecord;
  /** The head's versionstamp the commit gave. */
  readonly versionstamp: string;
  /** Identities of the request's conversation: its start, its messages, then the reply's. */
  readonly conversation: CachedChain["conversation"];
  readonly engineMs: number;
  /** When the turn started (`performance.now()`), for the gateway's own time. */
  readonly started: number;
}

/** Caches the chain at its new version and counts the turn. */
export function cacheAndCount(deps: CacheDeps, committed: CommittedTurn): void {
  const { route, settled, record } = committed;
  const { header, turn } = record;
  deps.cache.put(cacheKey(header), committed.versionstamp, {
    header,
    prompt: route.prompt.ids.concat([...settled.output, ...settled.closing]),
    ...(route.prompt.images.length > 0 ? { images: route.prompt.images } : {}),
    ...(turn.routes ? { routes: withTurn(route.prompt.routes, turn) } : {}),
    conversation: committed.conversation,
  });
  const metrics = deps.metrics;
  if (!metrics) return;
  metrics.turns.inc(route.kind);
  metrics.promptTokens.add(turn.inputLen);
  if (turn.cachedTokens !== undefined) metrics.cachedTokens.add(turn.cachedTokens);
  metrics.sampledTokens.add(turn.outputLen);
  for (const flag of settled.flags) metrics.turnFlags.inc(flag);
  if (turn.routes) {
    metrics.routedExpertRows.add(turn.routes.rows);
    if (turn.routes.mismatched) metrics.routingMismatchRows.add(turn.routes.mismatched);
  }
  metrics.engineSeconds.observe(committed.engineMs / 1000);
  metrics.gatewaySeconds.observe(
    (performance.now() - committed.started - committed.engineMs) / 1000,
  );
}
