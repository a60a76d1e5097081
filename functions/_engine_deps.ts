/**
 * The engine a gateway talks to, built from the configuration: one worker behind a router, a
 * fleet the gateway places chains on, or the built-in scripted engine when no `ENGINE_URL` is
 * set; and the controller that pauses, continues and versions every worker.
 *
 * @module
 */
import type { Config } from "../lib/config/mod.ts";
import {
  type Engine,
  type EngineController,
  type EngineDialect,
  EngineHttpWorker,
  type MoeShape,
  PlacedEngine,
} from "../lib/engine/mod.ts";
import { ConfigError } from "../lib/errors/mod.ts";
import type { GatewayMetrics } from "../lib/metrics/mod.ts";
import type { ServedVision } from "../lib/model/mod.ts";
import { type ScriptedEngine, startScriptedEngine } from "../lib/scripted_engine/mod.ts";
import type { ChatTokenizer } from "../lib/tokenizer/mod.ts";

/** What the engine is built with besides the configuration. */
export interface EngineParts {
  readonly dialect: EngineDialect;
  readonly tokenizer: ChatTokenizer;
  readonly metrics: GatewayMetrics;
  readonly contextLength: number;
  readonly vision: ServedVision | null;
  readonly moe: MoeShape | null;
  /** An engine to use instead (a test's); left open on close. */
  readonly given?: Engine;
  /** The thread engine requests are made on (one several gateways share); left open on close. */
  readonly httpWorker?: EngineHttpWorker;
}

/** The engine, its controller, and the scripted engine when it is the one answering. */
export interface ConnectedEngine {
  readonly engine: Engine;
  readonly control: EngineController;
  readonly scripted: ScriptedEngine | null;
  /** Closes what was made here: the connection pool, the request thread, the scripted engine. */
  close(): Promise<void>;
}

/**
 * Connects the configured engine in its dialect (`ENGINE_API`), placed as `ENGINE_PLACEMENT`
 * says, starting the scripted engine when there is no `ENGINE_URL`.
 *
 * @throws {ConfigError} naming `ENGINE_SESSIONS` on a dialect without engine sessions.
 */
export async function connectEngine(config: Config, parts: EngineParts): Promise<ConnectedEngine> {
  const { dialect, metrics } = parts;
  if (config.engineSessions && !dialect.sessions) {
    throw new ConfigError(
      "ENGINE_SESSIONS",
      `Invalid ENGINE_SESSIONS: the ${dialect.name} dialect has no engine sessions`,
    );
  }
  let scripted: ScriptedEngine | null = null;
  // Engine requests are made off the request's event loop (docs/DESIGN.md §7).
  const httpWorker = parts.given ? null : parts.httpWorker ?? new EngineHttpWorker();
  let engine = parts.given;
  if (!engine) {
    const options = {
      ...(httpWorker ? { httpWorker } : {}),
      connections: config.engineConnections,
      timeoutMs: config.engineTimeoutMs,
      metrics,
      endpoint: config.vllmEndpoint,
      cacheSalt: config.cacheSalt,
      routingKeys: config.enginePlacement === "router",
      ...(config.engineSessions
        ? { engineSessions: { idleS: config.engineSessionIdleS, capacity: parts.contextLength } }
        : {}),
      ...(parts.moe ? { moe: parts.moe } : {}),
    };
    if (config.enginePlacement === "gateway") {
      // Validated with the configuration: gateway placement names its workers.
      engine = new PlacedEngine(
        config.engineWorkers!.map((url) => ({ url, engine: dialect.connect(url, options) })),
        { healthIntervalMs: config.engineHealthIntervalMs, metrics },
      );
    } else {
      let url = config.engineUrl;
      if (url === null) {
        scripted = await startScriptedEngine({
          tokenizer: parts.tokenizer,
          latencyMs: config.scriptedLatencyMs,
          dialect: dialect.name,
          ...(parts.vision
            ? { vision: { settings: parts.vision.settings, padId: parts.vision.padId } }
            : {}),
          ...(parts.moe ? { moe: parts.moe } : {}),
        });
        url = scripted.url;
      }
      engine = dialect.connect(url, options);
    }
  }
  const connected = engine;
  return {
    engine: connected,
    control: dialect.control(connected.url, {
      workers: config.engineWorkers,
      timeoutMs: config.engineTimeoutMs,
    }),
    scripted,
    close: async () => {
      if (!parts.given) await connected.close();
      if (!parts.httpWorker) await httpWorker?.close();
      await scripted?.close();
    },
  };
}
