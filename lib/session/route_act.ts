/**
 * Carrying a route plan out (docs/DESIGN.md §4): continuing a chain — its kept tokens, then the
 * new messages, or all of them when nothing is kept — or starting one with the whole
 * conversation, and the one KV write a plan may need: registering the new chain (wiping the
 * conversation it replaces), or reopening a chain another had replaced. A write is checked
 * against the versionstamps the plan was read at; a lost race answers `null`, and the caller
 * plans again.
 *
 * @module
 */
import type { ChainHeader } from "../chain/mod.ts";
import { keys } from "../kv/mod.ts";
import { LimitError, MAX_CHAINS_PER_SESSION } from "../limits/mod.ts";
import { ContextOverflowError } from "./errors.ts";
import { newChainHeader } from "./route_plan.ts";
import type { ExtendPlan, RegisterPlan, RouteRequest, RouteSnapshot } from "./route_types.ts";
import type { ChainBase, ChainRoute, RouteDeps, RouteLimits, TurnPrompt } from "./routed_turn.ts";
import { registerChain, reopenChain } from "./session_store.ts";
import { chainHistory, deltaPrompt, wholePrompt } from "./turn_prompt.ts";
import type { TurnInput } from "./turn_input.ts";

/** Everything an act reads: the request, the snapshot the plan was made on, and what it may do. */
export interface ActContext<Reply> {
  readonly deps: RouteDeps;
  readonly input: TurnInput<Reply>;
  readonly request: RouteRequest;
  readonly snapshot: RouteSnapshot;
  /** The session record's versionstamp as the snapshot read it (a write is checked against it). */
  readonly sessionVersionstamp: string;
  /** Whether the plan's write is made; without it nothing is written (a probe, a count). */
  readonly write: boolean;
  readonly limits: RouteLimits;
}

/**
 * The route, if its prompt leaves room for at least one token of output.
 *
 * @throws {ContextOverflowError} when it does not.
 */
export function fits(route: ChainRoute, contextLength: number): ChainRoute {
  const length = route.prompt.ids.length;
  if (length >= contextLength) throw new ContextOverflowError(length, contextLength);
  return route;
}

/** Continues an existing chain: its kept tokens, then the new messages (or all of them). */
export async function extendChain<Reply>(
  context: ActContext<Reply>,
  plan: ExtendPlan,
): Promise<ChainRoute | null> {
  const { deps, input, snapshot, limits } = context;
  const chain = snapshot.chains.get(plan.chainId)!;
  const header = chain.header;
  const whole = header.turnCount === plan.keep;
  const turns = whole ? null : chain.turns!.slice(0, plan.keep);
  const base: ChainBase = {
    turnCount: plan.keep,
    lastRid: whole ? header.lastRid : turns!.at(-1)?.rid ?? null,
    reasoning: whole ? header.reasoning : turns!.some((turn) => turn.reasoning),
  };
  let prompt: TurnPrompt;
  if (plan.keep === 0) {
    input.verifyHistory();
    prompt = await wholePrompt(deps, input.prompt(), limits);
  } else {
    const history = await chainHistory(deps, chain, turns);
    // The tools the model knew at the end of the kept turns: a rewind goes back past the notes
    // of the turns it drops.
    const known = whole ? header.tools : turns!.at(-1)!.toolNames;
    prompt = await deltaPrompt(
      deps,
      history,
      input.lower(plan.from, known),
      input.enableThinking,
      limits,
    );
  }
  const routed = chainRoute(
    context,
    plan,
    {
      key: keys.chain(header.sessionId, header.id),
      value: header,
      versionstamp: chain.versionstamp,
    },
    base,
    prompt,
  );
  if (!plan.reopen || !context.write) return routed;
  // A replaced chain becomes current again; its replacement is wiped, in one commit.
  fits(routed, limits.contextLength);
  const retire = plan.reopen.retire ? snapshot.chains.get(plan.reopen.retire) ?? null : null;
  const now = Date.now();
  const reopened: ChainHeader = { ...header, wipedAt: null, updatedAt: now };
  const versionstamp = await reopenChain(deps.kv, {
    session: { record: snapshot.session, versionstamp: context.sessionVersionstamp },
    next: header.role === "main" ? { ...snapshot.session, mainChain: header.id } : null,
    chain: { header: reopened, versionstamp: chain.versionstamp },
    agentId: header.role === "main" ? null : header.agentId,
    retire: retire
      ? {
        header: { ...retire.header, wipedAt: now, updatedAt: now },
        versionstamp: retire.versionstamp,
      }
      : null,
    metrics: deps.metrics,
  });
  if (versionstamp === null) return null;
  return { ...routed, chain: { key: routed.chain.key, value: reopened, versionstamp } };
}

/** Registers a new chain and renders the whole conversation as its first prompt. */
export async function startChain<Reply>(
  context: ActContext<Reply>,
  plan: RegisterPlan,
): Promise<ChainRoute | null> {
  const { deps, input, snapshot, limits } = context;
  input.verifyHistory();
  const { session } = snapshot;
  const now = Date.now();
  const header = newChainHeader(session.id, plan, context.request, now);
  const key = keys.chain(session.id, plan.chainId);
  const base = { turnCount: 0, lastRid: null, reasoning: false };
  const prompt = await wholePrompt(deps, input.prompt(), limits);
  const planned = chainRoute(context, plan, { key, value: null, versionstamp: null }, base, prompt);
  // A prompt that cannot be served registers nothing (and wipes no conversation).
  if (!context.write) return planned;
  fits(planned, limits.contextLength);
  if (session.chainCount >= MAX_CHAINS_PER_SESSION) {
    throw new LimitError(
      "messages",
      `session "${session.id}" holds ${session.chainCount} chains, the most a session may hold; this request would start another`,
    );
  }
  const replaced = plan.replaces ? snapshot.chains.get(plan.replaces) ?? null : null;
  const versionstamp = await registerChain(deps.kv, {
    session: { record: session, versionstamp: context.sessionVersionstamp },
    next: {
      ...session,
      chainCount: session.chainCount + 1,
      mainChain: plan.becomesMain ? plan.chainId : session.mainChain,
    },
    header,
    agentId: input.agent.id,
    retire: replaced
      ? {
        header: plan.retireAs === "side"
          ? { ...replaced.header, role: "side", updatedAt: now }
          : { ...replaced.header, wipedAt: now, updatedAt: now },
        versionstamp: replaced.versionstamp,
      }
      : null,
    metrics: deps.metrics,
  });
  if (versionstamp === null) return null;
  return {
    ...planned,
    chain: { key, value: header, versionstamp },
    ...(replaced && plan.retireAs === "wiped" ? { retired: replaced.header.id } : {}),
  };
}

/** The route a plan's prompt makes on `chain`. */
function chainRoute<Reply>(
  context: ActContext<Reply>,
  plan: ExtendPlan | RegisterPlan,
  chain: Deno.KvEntryMaybe<ChainHeader>,
  base: ChainBase,
  prompt: TurnPrompt,
): ChainRoute {
  return {
    kind: plan.kind,
    sessionId: context.snapshot.session.id,
    chainId: plan.chainId,
    chain,
    base,
    requestDigest: plan.requestDigest,
    bodyDigest: plan.bodyDigest,
    prompt,
    tools: context.input.toolNames,
    recordMessages: context.snapshot.session.recordMessages === true,
  };
}
