/**
 * What routing hands a turn (docs/DESIGN.md §4): a replay carries the recorded turn it answers
 * with and nothing else; a turn to generate carries its chain as routed on and the prompt built
 * for it. The types live apart from `route.ts` so the modules that build a route (the acts, the
 * prompt) can name them without importing the door they are called from.
 *
 * @module
 */
import type {
  ChainHeader,
  ChainRoutes,
  TurnImage,
  TurnMessages,
  TurnRecord,
} from "../chain/mod.ts";
import type { PromptIds } from "../engine/mod.ts";
import type { GatewayMetrics } from "../metrics/mod.ts";
import type { PromptEncoder } from "../template/mod.ts";
import type { RouteKind, RoutePolicy } from "./route_types.ts";
import type { SnapshotDeps } from "./route_snapshot.ts";

/** What routing reads. */
export interface RouteDeps extends SnapshotDeps {
  readonly routePolicy: RoutePolicy;
  /** Renders and encodes the new text of a turn, off the event loop (`lib/template`). */
  readonly encoder: PromptEncoder;
  /** Counts turns, tokens, flags and commit retries; nothing is counted without it. */
  readonly metrics?: GatewayMetrics;
}

/** How big a prompt may grow, and the caller's signal (its client left: the work stops). */
export interface RouteLimits {
  /** Most tokens of a prompt, output included: a prompt must leave room for one. */
  readonly contextLength: number;
  readonly signal?: AbortSignal;
}

/** The chain state a new turn builds on (the kept part of the chain after a rewind). */
export interface ChainBase {
  readonly turnCount: number;
  readonly lastRid: string | null;
  /** Some kept turn's output holds reasoning. */
  readonly reasoning: boolean;
}

/** The prompt of a turn to generate, as built from the chain's kept tokens and the new text. */
export interface TurnPrompt {
  /** The whole prompt: the chain's kept tokens followed by the delta. */
  readonly ids: PromptIds;
  /** Tokens this turn adds before its output (the whole prompt on a chain's first turn). */
  readonly delta: number[];
  /** The prompt's images in order: the kept history's, then the delta's (`newImages`). */
  readonly images: readonly TurnImage[];
  /** The images the delta adds (recorded with the turn). */
  readonly newImages: readonly TurnImage[];
  /** The bytes (base64) of the delta's images, by digest. */
  readonly imageData: ReadonlyMap<string, string>;
  /** The prompt ends inside an open reasoning block. */
  readonly startsInReasoning: boolean;
  /** The canonical messages rendered into `delta`. */
  readonly messages: TurnMessages;
  /** The routed experts the chain's kept turns recorded (R3; none on a chain's first turn). */
  readonly routes: ChainRoutes;
}

/** The digests every routed request carries. */
interface RouteDigests {
  readonly sessionId: string;
  readonly chainId: string;
  /** Prefix digest of the request's whole conversation. */
  readonly requestDigest: string;
  /** Digest of the whole normalized request: its body and the agent it comes from. */
  readonly bodyDigest: string;
}

/** A retry of a request already answered: the recorded turn is answered again. */
export interface ReplayRoute extends RouteDigests {
  readonly kind: "replay";
  /** The recorded turn the replay answers with (on chain `chainId`). */
  readonly record: TurnRecord;
}

/** A request that adds a turn to a chain. */
export interface ChainRoute extends RouteDigests {
  readonly kind: Exclude<RouteKind, "replay">;
  /** The chain's header as the turn found it (an empty one for a chain just registered). */
  readonly chain: Deno.KvEntryMaybe<ChainHeader>;
  readonly base: ChainBase;
  readonly prompt: TurnPrompt;
  /**
   * Names of the tools the model has been told are offered once this turn is recorded: the
   * request's (a delta's note tells the model of tools added and withdrawn since the last turn).
   */
  readonly tools: readonly string[];
  /** The session keeps each turn's request messages (`record_messages`). */
  readonly recordMessages: boolean;
  /** The chain this turn's new chain wiped: it can no longer continue (unless reopened). */
  readonly retired?: string;
}

/** A request routed to its chain. */
export type RoutedTurn = ReplayRoute | ChainRoute;

/** Tokens of the prompt a routed request sends the engine (a replay's: its recorded prompt's). */
export function promptLength(route: RoutedTurn): number {
  return route.kind === "replay" ? route.record.inputLen : route.prompt.ids.length;
}
