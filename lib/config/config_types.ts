/**
 * The configuration's types: the settings as the schema parses them, and as `resolveConfig()`
 * gives them to every module, resolved and frozen.
 *
 * @module
 */
import type { z } from "zod";
import type { AgentInstallSettings } from "../agents/mod.ts";
import type { DeepReadonly } from "./_variable.ts";
import type { ConfigSchema } from "./config_schema.ts";

/** The settings as their variables give them, before the rules that join variables. */
export type ParsedConfig = z.output<typeof ConfigSchema>;

/**
 * The settings the rules of `resolveConfig()` compute from more than one variable, or give a
 * shape of their own (the agents' install settings as a map by agent name).
 */
export interface ComputedConfig {
  /**
   * Gateway worker processes `serve.ts` runs on one port, sharing the KV file: one per core
   * unless `WORKERS` says (always 1 with a `:memory:` KV, which processes cannot share).
   */
  readonly workers: number;
  /** Folder holding `tokenizer.json` and `tokenizer_config.json`. */
  readonly tokenizerPath: string;
  /** The engine's URL (`ENGINE_URL`, else its old name `SGLANG_URL`); `null`: the scripted one. */
  readonly engineUrl: string | null;
  /** This machine's name among the hosts sharing the store (`HOST_ID`, else the hostname). */
  readonly hostId: string;
  /** Each process's memory budget in MiB (`MEMORY_BUDGET_MB`, or the machine's default). */
  readonly memoryBudgetMb: number;
  /** How rollouts run, each listed agent's install settings by agent name. */
  readonly rollout: Omit<ParsedConfig["rollout"], "agents"> & {
    readonly agents: ReadonlyMap<string, AgentInstallSettings>;
  };
}

/** The resolved, frozen configuration every module receives. */
export type Config = DeepReadonly<Omit<ParsedConfig, keyof ComputedConfig> & ComputedConfig>;

/** How rollouts run. */
export type RolloutConfig = Config["rollout"];

/** How the gateway reaches E2B. */
export type E2bConfig = Config["e2b"];

/** A judger as configuration names it. */
export type JudgerConfig = Config["judgers"][string];

/** What to do with a turn whose sampled tokens do not survive decode → encode (T5). */
export type RoundtripPolicy = Config["roundtripPolicy"];

/** What to do with image and document blocks, which text models cannot read. */
export type ImagePolicy = Config["imagePolicy"];
