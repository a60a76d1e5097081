/**
 * A session in memory for the route planner's matrix: it reads snapshots the way the KV reader
 * does (in stages, on the planner's request), carries plans out the way the executor does, and
 * describes the resulting segments by what each turn rendered (mask 0, in brackets) and sampled
 * (mask 1, bare).
 *
 * @module
 */
import { messageIdentities, type MessageParam, startIdentity } from "../../lib/anthropic/mod.ts";
import { type ChainHeader, segmentKind, type TurnRecord } from "../../lib/chain/mod.ts";
import { extendDigest } from "../../lib/chat/mod.ts";
import { AGENTS, dispatchToolsOf } from "../../lib/agents/mod.ts";
import {
  DISPATCH_LOOKBACK_TURNS,
  type DispatchCall,
  newChainHeader,
  planRoute,
  type RouteChain,
  type RoutePlan,
  type RoutePolicy,
  type RouteRequest,
  type RouteSnapshot,
} from "../../lib/session/mod.ts";
import { session as sessionRecord } from "./_store.ts";

/** The dispatch tools of every listed agent, as the gateway reads them. */
const DISPATCH = dispatchToolsOf(AGENTS);

/** One request of a scenario: labelled messages, who sends them, and the reply it gets. */
export interface Step {
  readonly send: readonly string[];
  /** Label of the reply the model samples (a key of the scenario's replies). */
  readonly reply: string;
  readonly agent?: string;
  readonly parent?: string;
  readonly system?: string;
  readonly model?: string;
  readonly tools?: readonly string[];
  /** Anything else in the request (sampling settings): a change is another body. */
  readonly settings?: string;
}

/** A sampled reply: its message and how many tokens the model sampled. */
export interface Reply {
  readonly message: MessageParam;
  readonly tokens: number;
}

interface SimTurn {
  readonly record: TurnRecord;
  /** What the turn's tokens hold: labels rendered as context, and the sampled reply. */
  readonly rendered: readonly string[];
  readonly sampled: string;
  readonly reply: MessageParam;
}

interface SimChain {
  header: ChainHeader;
  /** Every turn recorded, discarded ones included; the live ones are reached from `lastRid`. */
  readonly all: SimTurn[];
  version: number;
}

/** What one step did: its plan's kind and chain. */
export interface Outcome {
  readonly kind: string;
  readonly chain: string;
}

/** A session the planner routes in, with every chain kept in memory. */
export class RouteSim {
  readonly #chains = new Map<string, SimChain>();
  readonly #agents = new Map<string, string>();
  readonly #replays = new Map<string, { chainId: string; rid: string }>();
  /** What this process cached: by chain, its version and conversation. */
  readonly #cache = new Map<
    string,
    { version: number; messages: readonly string[]; start: string }
  >();
  #session = sessionRecord({ chainCount: 0 });
  #clock = 0;
  #rids = 0;

  constructor(
    readonly messages: Readonly<Record<string, MessageParam>>,
    readonly replies: Readonly<Record<string, Reply>>,
    readonly policy: RoutePolicy,
    /** Forget the cache before every step, as a process that did not record the chain. */
    readonly cold = false,
  ) {}

  /** Routes and records one step; returns what the plan was. */
  send(step: Step): Outcome {
    const conversation = step.send.map((label) => this.#message(label));
    const request = this.#request(step, conversation);
    let snapshot = this.#firstStage(request);
    let plan = planRoute(snapshot, request, this.policy);
    while ("need" in plan) {
      snapshot = this.#satisfy(snapshot, plan);
      plan = planRoute(snapshot, request, this.policy);
    }
    this.#apply(plan, step, request);
    return { kind: plan.kind, chain: plan.chainId };
  }

  /** Each chain with turns as `id kind: [context] sampled [context] sampled…`, in start order. */
  segments(): string[] {
    return [...this.#chains.values()]
      .filter((chain) => chain.header.turnCount > 0)
      .map((chain) => {
        const body = this.#live(chain).map((turn) =>
          `[${turn.rendered.join(" ")}] ${turn.sampled}`
        );
        return `${chain.header.id} ${segmentKind(chain.header)}: ${body.join(" ")}`;
      });
  }

  #message(label: string): MessageParam {
    const message = this.messages[label] ?? this.replies[label]?.message;
    if (!message) throw new Error(`no message "${label}"`);
    return message;
  }

  #request(step: Step, conversation: MessageParam[]): RouteRequest & { labels: readonly string[] } {
    const first = conversation.find((message) => message.role === "user");
    const firstText = !first
      ? ""
      : typeof first.content === "string"
      ? first.content
      : first.content.flatMap((block) => block.type === "text" ? [block.text] : []).join("\n");
    return {
      labels: step.send,
      agentId: step.agent ?? null,
      parentAgentId: step.parent ?? null,
      startIdentity: startIdentity(step.system ?? "You are the main agent."),
      messageIdentities: messageIdentities(conversation),
      settingsIdentity: `${step.model ?? "qwen3"}|${(step.tools ?? ["Bash", "Agent"]).join(",")}|${
        step.settings ?? ""
      }`,
      lastQueryIndex: conversation.findLastIndex((message) =>
        message.role === "user" &&
        (typeof message.content === "string" ||
          message.content.some((block) => block.type !== "tool_result"))
      ),
      model: step.model ?? "qwen3",
      toolNames: step.tools ?? ["Bash", "Agent"],
      firstUserText: firstText,
    };
  }

  #view(chain: SimChain, withTurns: boolean): RouteChain {
    return {
      header: chain.header,
      versionstamp: String(chain.version),
      ...(withTurns ? { turns: this.#live(chain).map((turn) => turn.record) } : {}),
    };
  }

  #firstStage(request: RouteRequest): RouteSnapshot {
    if (this.cold) this.#cache.clear();
    const agentChain = request.agentId ? this.#agents.get(request.agentId) ?? null : null;
    const ownId = request.agentId ? agentChain : this.#session.mainChain;
    const own = ownId ? this.#chains.get(ownId) : undefined;
    const chains = new Map<string, RouteChain>();
    let cached: RouteSnapshot["cached"] = null;
    if (own) {
      chains.set(own.header.id, this.#view(own, false));
      const hit = this.#cache.get(own.header.id);
      if (hit && hit.version === own.version) cached = hit;
    }
    return {
      session: this.#session,
      agentChain,
      parentChain: request.parentAgentId ? this.#agents.get(request.parentAgentId) ?? null : null,
      chains,
      complete: false,
      cached,
      dispatches: new Map(),
    };
  }

  #satisfy(snapshot: RouteSnapshot, need: Exclude<ReturnType<typeof planRoute>, RoutePlan>) {
    switch (need.need) {
      case "replay": {
        const entry = this.#replays.get(need.bodyDigest);
        const chain = entry ? this.#chains.get(entry.chainId) : undefined;
        const turn = chain ? this.#live(chain).find((t) => t.record.rid === entry!.rid) : undefined;
        return {
          ...snapshot,
          replay: turn ? { chainId: entry!.chainId, record: turn.record } : null,
        };
      }
      case "chains": {
        const chains = new Map(snapshot.chains);
        for (const chain of this.#chains.values()) {
          if (!chains.has(chain.header.id)) chains.set(chain.header.id, this.#view(chain, false));
        }
        return { ...snapshot, chains, complete: true };
      }
      case "turns": {
        const chains = new Map(snapshot.chains);
        for (const id of need.chains) chains.set(id, this.#view(this.#chains.get(id)!, true));
        return { ...snapshot, chains };
      }
      case "dispatch": {
        const calls: DispatchCall[] = [];
        const live = this.#live(this.#chains.get(need.chain)!);
        for (const turn of live.slice(-DISPATCH_LOOKBACK_TURNS).reverse()) {
          const blocks = typeof turn.reply.content === "string" ? [] : turn.reply.content;
          for (const block of [...blocks].reverse()) {
            if (block.type !== "tool_use") continue;
            const task = DISPATCH.taskOf(block.name, block.input as Record<string, unknown>);
            if (task !== null) calls.push({ id: block.id, task });
          }
        }
        return { ...snapshot, dispatches: new Map(snapshot.dispatches).set(need.chain, calls) };
      }
    }
  }

  #live(chain: SimChain): SimTurn[] {
    const byRid = new Map(chain.all.map((turn) => [turn.record.rid, turn]));
    const out: SimTurn[] = [];
    for (let rid = chain.header.lastRid; rid !== null;) {
      const turn = byRid.get(rid)!;
      out.push(turn);
      rid = turn.record.parent;
    }
    return out.reverse();
  }

  #apply(plan: RoutePlan, step: Step, request: RouteRequest & { labels: readonly string[] }) {
    if (plan.act === "replay") return;
    const now = ++this.#clock;
    let chain: SimChain;
    let kept: SimTurn[];
    let from: number;
    if (plan.act === "register") {
      const replaced = plan.replaces ? this.#chains.get(plan.replaces) : undefined;
      if (replaced && plan.retireAs === "side") {
        replaced.header = { ...replaced.header, role: "side", updatedAt: now };
        replaced.version++;
      } else if (replaced) this.#wipe(replaced, now);
      chain = {
        header: newChainHeader(this.#session.id, plan, request, now),
        all: [],
        version: 0,
      };
      this.#chains.set(plan.chainId, chain);
      if (request.agentId) this.#agents.set(request.agentId, plan.chainId);
      this.#session = {
        ...this.#session,
        chainCount: this.#session.chainCount + 1,
        mainChain: plan.becomesMain ? plan.chainId : this.#session.mainChain,
      };
      kept = [];
      from = 0;
    } else {
      chain = this.#chains.get(plan.chainId)!;
      if (plan.reopen) {
        const retire = plan.reopen.retire ? this.#chains.get(plan.reopen.retire) : undefined;
        if (retire) this.#wipe(retire, now);
        chain.header = { ...chain.header, wipedAt: null };
        if (chain.header.role === "main") {
          this.#session = { ...this.#session, mainChain: chain.header.id };
        } else if (chain.header.agentId) this.#agents.set(chain.header.agentId, chain.header.id);
      }
      kept = this.#live(chain).slice(0, plan.keep);
      from = plan.keep === 0 ? 0 : plan.from;
    }
    const reply = this.replies[step.reply];
    const replyIdentity = messageIdentities([
      ...step.send.map((l) => this.#message(l)),
      reply.message,
    ])
      .at(-1)!;
    const reasoning = typeof reply.message.content !== "string" &&
      reply.message.content.some((block) => block.type === "thinking");
    const record = {
      index: kept.length,
      rid: `r${++this.#rids}`,
      parent: kept.at(-1)?.record.rid ?? null,
      outputLen: reply.tokens,
      reasoning,
      messageCount: request.messageIdentities.length + 1,
      digest: extendDigest(plan.requestDigest, replyIdentity),
      requestDigest: plan.requestDigest,
      bodyDigest: plan.bodyDigest,
    } as TurnRecord;
    const turn = {
      record,
      rendered: request.labels.slice(from),
      sampled: step.reply,
      reply: reply.message,
    };
    chain.all.push(turn);
    chain.header = {
      ...chain.header,
      turnCount: kept.length + 1,
      messageCount: record.messageCount,
      digest: record.digest,
      lastRid: record.rid,
      tools: request.toolNames,
      reasoning: kept.some((t) => t.record.reasoning) || reasoning,
      updatedAt: now,
    };
    chain.version++;
    this.#replays.set(plan.bodyDigest, { chainId: chain.header.id, rid: record.rid });
    this.#cache.set(chain.header.id, {
      version: chain.version,
      start: request.startIdentity,
      messages: [...request.messageIdentities, replyIdentity],
    });
  }

  #wipe(chain: SimChain, now: number) {
    chain.header = { ...chain.header, wipedAt: now, updatedAt: now };
    chain.version++;
  }
}
