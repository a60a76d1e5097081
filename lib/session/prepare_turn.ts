/**
 * Preparing a turn (docs/DESIGN.md §6.3): the request routed to its chain and the chain's lease
 * taken, so turns of one chain run one at a time while other chains of the session generate in
 * parallel. Everything that can refuse the request happens here, before anything is generated.
 *
 * @module
 */
import type { ChainHeader } from "../chain/mod.ts";
import { newRid, type SamplingParams, samplingParams } from "../engine/mod.ts";
import {
  acquireLease,
  handOverLease,
  type HeldLease,
  keys,
  leaseIfUnchanged,
  type LeaseOptions,
  tryLease,
} from "../kv/mod.ts";
import { EncodeCancelledError } from "../tokenizer/mod.ts";
import type { SessionRecord } from "./records.ts";
import { route } from "./route.ts";
import { cachedHead } from "./route_snapshot.ts";
import {
  type ChainRoute,
  promptLength,
  type ReplayRoute,
  type RouteDeps,
  type RoutedTurn,
} from "./routed_turn.ts";
import { getChain } from "./session_store.ts";
import type { TurnInput } from "./turn_input.ts";

/** What preparing a turn reads. */
export interface PrepareDeps extends RouteDeps {
  readonly contextLength: number;
  /** How long a lease lasts and how long a request waits for a busy session or chain. */
  readonly lease: Pick<LeaseOptions, "ttlMs" | "waitMs" | "now">;
  /** This process, as it names itself in the leases it holds. */
  readonly holder: string;
}

/** What every prepared turn has. */
interface Prepared<Reply> {
  readonly input: TurnInput<Reply>;
  /** Engine request id of the turn, known before generation so a stream can name its message. */
  readonly rid: string;
  /** Tokens in the prompt (for a replay, in the recorded turn's prompt). */
  readonly promptTokens: number;
  readonly sampling: SamplingParams;
  /** When preparing began (`performance.now()`). */
  readonly started: number;
  /** Time spent routing and rendering, in ms. */
  readonly renderMs: number;
}

/** A retry to answer from its recorded turn: it needs no lease. */
export interface PreparedReplay<Reply> extends Prepared<Reply> {
  readonly route: ReplayRoute;
  readonly lease: null;
}

/** A turn ready to generate, holding its chain's lease until it is recorded or given up. */
export interface PreparedGeneration<Reply> extends Prepared<Reply> {
  readonly route: ChainRoute;
  readonly lease: HeldLease;
}

/** A turn ready to generate, or to replay. */
export type PreparedTurn<Reply> = PreparedReplay<Reply> | PreparedGeneration<Reply>;

/**
 * Routes the request and takes its chain's lease. The common turn (the main agent extending its
 * chain) is routed on the session entry the caller read (`session`) and takes the chain's lease
 * in one commit that checks nothing moved. Otherwise, or when something did, the request is
 * routed under the session's lease (registering a new chain if it starts one). A request whose
 * chain is busy waits for it and is routed again (it may have become a replay). Throws before
 * anything is generated, holding no lease; stops waiting when `signal` aborts.
 *
 * @throws {LeaseTimeoutError} when the session or the chain stays busy past the wait;
 * {SessionNotFoundError}, {SessionClosedError}, {ContextOverflowError}, and the adapter's own
 * errors from `lower` and `verifyHistory`.
 */
export async function prepareTurn<Reply>(
  deps: PrepareDeps,
  input: TurnInput<Reply>,
  signal?: AbortSignal,
  session?: Deno.KvEntry<SessionRecord>,
): Promise<PreparedTurn<Reply>> {
  const started = performance.now();
  const deadline = Date.now() + deps.lease.waitMs;
  const holder = `${deps.holder}/${crypto.randomUUID()}`;
  const lease: LeaseOptions = { ...deps.lease, metrics: deps.metrics };
  const wait = () => ({ ...lease, waitMs: Math.max(0, deadline - Date.now()), signal });
  const prepared = (routed: RoutedTurn, chainLease: HeldLease | null): PreparedTurn<Reply> => {
    const promptTokens = promptLength(routed);
    const common: Prepared<Reply> = {
      input,
      rid: routed.kind === "replay" ? routed.record.rid : newRid(),
      promptTokens,
      sampling: samplingParams(input.sampling, {
        promptLength: promptTokens,
        contextLength: deps.contextLength,
        stopIds: deps.tokenizer.ending.stopIds,
      }),
      started,
      renderMs: performance.now() - started,
    };
    return routed.kind === "replay"
      ? { ...common, route: routed, lease: null }
      : { ...common, route: routed, lease: chainLease! };
  };
  const limits = { contextLength: deps.contextLength, signal };
  if (session) {
    const quick = await extendWithoutSessionLease(deps, input, session, holder, lease, limits);
    if (quick) return prepared(quick.route, quick.lease);
  }
  let waited: { chainId: string; lease: HeldLease } | null = null;
  for (;;) {
    const sessionLease = await acquireLease(deps.kv, keys.lease(input.sessionId), holder, wait());
    let routed: RoutedTurn;
    let chainLease: HeldLease | null = null;
    try {
      routed = await route(deps, input, { on: "leased" }, limits);
      if (waited && (routed.kind === "replay" || waited.chainId !== routed.chainId)) {
        await waited.lease.release();
        waited = null;
      }
      if (routed.kind !== "replay") {
        // Usually one commit releases the session and takes the chain, if the chain stood still.
        chainLease = waited?.lease ??
          await handOverLease(
            deps.kv,
            sessionLease,
            keys.chainLease(input.sessionId, routed.chainId),
            holder,
            lease,
            [routed.chain],
          ) ??
          await takeChain(deps, routed, holder, lease);
        waited = null;
      }
    } catch (error) {
      await waited?.lease.release();
      throw error;
    } finally {
      await sessionLease.release();
    }
    if (routed.kind === "replay" || chainLease) return prepared(routed, chainLease);
    // The chain is busy: wait for it outside the session's lease, then route again.
    const chainKey = keys.chainLease(input.sessionId, routed.chainId);
    waited = {
      chainId: routed.chainId,
      lease: await acquireLease(deps.kv, chainKey, holder, wait()),
    };
  }
}

/**
 * The common turn in one KV operation (a commit taking its chain's lease) instead of four: routed
 * on `session` and the chain's head this process cached, without the session's lease, which the
 * commit checks is free (a close or a registration holds it), along with the session and the
 * chain as routed on. A head that moved (another process's turn) fails the commit: the chain is
 * read and the turn routed on it, once. With no cached head it is routed on the head read from
 * KV. `null` when the plan needs more, or anything else moved: the caller routes under the
 * session's lease. An error judged here is left for that route to judge again.
 */
async function extendWithoutSessionLease<Reply>(
  deps: PrepareDeps,
  input: TurnInput<Reply>,
  session: Deno.KvEntry<SessionRecord>,
  holder: string,
  lease: LeaseOptions,
  limits: { contextLength: number; signal?: AbortSignal },
): Promise<{ route: ChainRoute; lease: HeldLease } | null> {
  const cached = cachedHead(deps, input.agent.id, session.value);
  const onHead = async (head?: Deno.KvEntryMaybe<ChainHeader>) => {
    const mode = cached && !head
      ? { on: "cached_head" as const, session, head: cached }
      : { on: "read_head" as const, session, head };
    const routed = await route(deps, input, mode, limits).catch((error) => {
      // A client that left is not judged again; anything else is, under the session's lease.
      if (error instanceof EncodeCancelledError) throw error;
      return null;
    });
    if (routed === null || routed.kind === "replay") return null;
    // The lease's commit checks the two entries are as routed on, and the session's lease free.
    const chainLease = await leaseIfUnchanged(
      deps.kv,
      keys.chainLease(input.sessionId, routed.chainId),
      holder,
      lease,
      [
        { key: session.key, versionstamp: session.versionstamp },
        { key: routed.chain.key, versionstamp: routed.chain.versionstamp },
        { key: keys.lease(input.sessionId), versionstamp: null },
      ],
    );
    return { route: routed, lease: chainLease };
  };
  const first = await onHead();
  if (first === null) return null;
  if (first.lease) return { route: first.route, lease: first.lease };
  if (!cached) return null;
  // Routed on the head cached here: if another process moved it, route again on it.
  const head = await getChain(deps.kv, input.sessionId, first.route.chainId);
  if (head.versionstamp === first.route.chain.versionstamp) return null; // busy, or the session moved
  const again = await onHead(head);
  return again?.lease ? { route: again.route, lease: again.lease } : null;
}

/** The chain's lease if it is free and the chain has not moved since it was routed. */
async function takeChain(
  deps: PrepareDeps,
  routed: ChainRoute,
  holder: string,
  lease: LeaseOptions,
): Promise<HeldLease | null> {
  const sessionId = routed.sessionId;
  const attempt = await tryLease(
    deps.kv,
    keys.chainLease(sessionId, routed.chainId),
    holder,
    lease,
  );
  if (!("lease" in attempt)) return null;
  const now = await getChain(deps.kv, sessionId, routed.chainId);
  if (now.versionstamp === routed.chain.versionstamp) return attempt.lease;
  await attempt.lease.release();
  return null;
}
