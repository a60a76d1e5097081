/**
 * The routing planner's vocabulary (docs/DESIGN.md §4.1): how a request was routed, the policy's
 * bounds, what the planner reads of a request and of the session, what more it may ask to read,
 * and the plans it answers with.
 *
 * @module
 */
import type { ChainHeader, ChainRole, TurnRecord } from "../chain/mod.ts";
import type { SessionRecord } from "./records.ts";

/** How a request was routed. */
export type RouteKind =
  /** Continues its chain: the new messages are rendered after the chain's tokens. */
  | "append"
  /** Repeats a request already answered: the recorded reply is sent again. */
  | "replay"
  /** Goes back to an earlier turn boundary of its chain; the later turns leave the chain. */
  | "rewind"
  /** Like a rewind, where the client echoed a reply other than the one sampled (edited). */
  | "realign"
  /** Continues a chain another conversation had replaced, which becomes current again. */
  | "resume"
  /** The session's first conversation (or a registered chain's first turn). */
  | "start"
  /** A new conversation of the same agent replacing its current one (a compaction, an edit). */
  | "wipe"
  /** A sub-agent's first request. */
  | "subagent"
  /** A request of no agent: another model, or no tools where the main chain has some. */
  | "side";

/** How far the planner may go to keep a conversation in one chain. */
export interface RoutePolicy {
  /**
   * Most sampled tokens a realign may drop from training (the turns after the boundary it goes
   * back to); past this an edited echo starts a new chain and the old one stays a segment.
   */
  readonly realignMaxTokens: number;
  /**
   * `keep`: a chain is append-only, the model sees its reasoning as sampled. `template`: at a new
   * user query, a chain holding reasoning is closed and the next starts from the template's own
   * rendering (which drops earlier reasoning), as a deployed conversation is rendered.
   */
  readonly thinkingHistory: "keep" | "template";
}

/** What the planner reads of a request. */
export interface RouteRequest {
  readonly agentId: string | null;
  readonly parentAgentId: string | null;
  /** Identity of the conversation's start (the system prompt). */
  readonly startIdentity: string;
  /** Identity of each message (see the adapter's `messageIdentities`). */
  readonly messageIdentities: readonly string[];
  /** Identity of everything else in the request, `stream` aside. */
  readonly settingsIdentity: string;
  /** Index of the last user message that asks something new; -1 if none. */
  readonly lastQueryIndex: number;
  readonly model: string;
  readonly toolNames: readonly string[];
  /** The text of the opening user messages, where a sub-agent's task would be. */
  readonly firstUserText: string;
}

/** A chain as the snapshot holds it. */
export interface RouteChain {
  readonly header: ChainHeader;
  /** The header's versionstamp, which a turn recorded on this route is checked against. */
  readonly versionstamp: string;
  /** Its live turns, first to last, once read. */
  readonly turns?: readonly TurnRecord[];
}

/**
 * A call that may have dispatched a sub-agent (a dispatch tool of some agent, `lib/agents`):
 * the client's id for it, and its task.
 */
export interface DispatchCall {
  readonly id: string;
  readonly task: string;
}

/** The conversation a chain's cached tokens render: identities of its start and messages. */
export interface CachedConversation {
  readonly start: string;
  readonly messages: readonly string[];
}

/** What the planner knows of the session. */
export interface RouteSnapshot {
  readonly session: SessionRecord;
  /** The chain the request's agent id names (`null`: no agent id, or an agent not seen yet). */
  readonly agentChain: string | null;
  /** The chain the request's parent agent id names, if any. */
  readonly parentChain: string | null;
  /** Chains read so far: always the request's own chain, every chain once `complete`. */
  readonly chains: ReadonlyMap<string, RouteChain>;
  readonly complete: boolean;
  /** The conversation this process cached for the own chain at its current version. */
  readonly cached: CachedConversation | null;
  /** The live turn that answered this body before (`undefined` until looked up). */
  readonly replay?: { readonly chainId: string; readonly record: TurnRecord } | null;
  /** Dispatching calls of a chain's latest turns, latest first, by chain, once read. */
  readonly dispatches: ReadonlyMap<string, readonly DispatchCall[]>;
}

/** More of the session the planner needs before it can decide. */
export type RouteNeed =
  | { readonly need: "replay"; readonly bodyDigest: string }
  | { readonly need: "chains" }
  | { readonly need: "turns"; readonly chains: readonly string[] }
  | { readonly need: "dispatch"; readonly chain: string };

/** The digests a turn recorded on this route carries. */
interface PlanDigests {
  /** Prefix digest of the request's whole conversation. */
  readonly requestDigest: string;
  /** Digest of the whole request and the agent it comes from: a retry repeats it. */
  readonly bodyDigest: string;
}

/** Continue an existing chain, keeping its first `keep` live turns. */
export interface ExtendPlan extends PlanDigests {
  readonly act: "extend";
  readonly kind: "append" | "resume" | "rewind" | "realign" | "start";
  readonly chainId: string;
  readonly keep: number;
  /** The first message rendered after the kept turns (0 with `keep` 0: the whole conversation). */
  readonly from: number;
  /** The chain was replaced: it becomes current again and `retire`, its replacement, wiped. */
  readonly reopen: { readonly retire: string | null } | null;
}

/** Answer with a recorded turn. */
export interface ReplayPlan extends PlanDigests {
  readonly act: "replay";
  readonly kind: "replay";
  readonly chainId: string;
  readonly record: TurnRecord;
}

/** Register a new chain and render the whole conversation as its first prompt. */
export interface RegisterPlan extends PlanDigests {
  readonly act: "register";
  readonly kind: "start" | "wipe" | "subagent" | "side";
  readonly chainId: string;
  readonly role: ChainRole;
  /** The dispatching chain, or the chain this one replaces. */
  readonly parent: string | null;
  readonly dispatch: string | null;
  /** The chain this one replaces (wiped in the same commit, or made a side chain). */
  readonly replaces: string | null;
  /**
   * What the replaced chain becomes: `wiped` (a conversation the agent replaced, a `wipe`
   * segment) or `side` (a helper's conversation that had held the main chain's place).
   */
  readonly retireAs: "wiped" | "side";
  /** Whether the session's main chain becomes this one. */
  readonly becomesMain: boolean;
  readonly startDigest: string;
}

/** Where a request goes. */
export type RoutePlan = ExtendPlan | ReplayPlan | RegisterPlan;
