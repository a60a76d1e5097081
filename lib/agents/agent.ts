/**
 * What an agent is to the gateway: one record per agent that holds its habits on the wire (the
 * headers naming its sub-agents, the tool calls starting one) and its harness for `/rollout` —
 * where its CLI comes from (lent by the host to a local sandbox; installed with npm, or unpacked,
 * in an E2B one), the settings a request gives it, what runs it headless against the gateway (its
 * command, its environment, the files it reads), and how it said it ended. `agents.ts` lists them.
 *
 * @module
 */
import type { z } from "zod";
import type { HarnessSettingsBase } from "./common_settings.ts";
import type {
  AgentInstallSettings,
  CliPackage,
  InstallDeclaration,
  LocalAgent,
} from "./install.ts";
import type { WireHabits } from "./wire_habits.ts";

/**
 * Where the agent reaches the gateway: its base URL (no `/v1`), the session's token, the model,
 * and the served model's context window (for agents that are told it).
 */
export interface AgentConnection {
  readonly baseUrl: string;
  readonly token: string;
  readonly model: string;
  readonly contextLength: number;
}

/** Where the agent runs: its program (shell words), its prompt, the sandbox's temporary folder. */
export interface AgentRun {
  readonly program: string;
  readonly prompt: string;
  readonly tmpdir: string;
}

/** What preparing an agent uses of its sandbox: its temporary folder, and writing a file. */
export interface AgentSandbox {
  /** A folder of the sandbox's own for files besides the work tree. */
  readonly tmpdir: string;
  writeFile(path: string, content: string): Promise<void>;
}

/** How the agent said it ended, from its own output. */
export interface AgentEnd {
  /** Turns the agent reported (Claude Code's and Qwen Code's `num_turns`), when it said. */
  readonly numTurns: number | null;
  /**
   * The agent's own account of how it ended, when it said: Claude Code's and Qwen Code's result
   * `subtype`, Codex's `success` or `error`.
   */
  readonly result: string | null;
}

/** What every agent's record holds. `S` is its parsed settings. */
export interface AgentBase<S extends HarnessSettingsBase> extends WireHabits {
  /** The `agent.harness` of a request, and the agent's name everywhere else. */
  readonly name: S["harness"];
  /** Its name for people. */
  readonly title: string;
  /** Its settings: a strict object with `harness: z.literal(name)` and `COMMON_SETTINGS`. */
  readonly settings: z.ZodType<S, unknown>;
  /** How an operator gets it onto this machine, told when a local sandbox lacks it. */
  readonly installHint: string;
  /** The shell command that runs the agent headless with its prompt. */
  command(settings: S, run: AgentRun): string;
  /**
   * Writes into `sandbox` the files the agent reads besides its command and resolves to its
   * environment: the gateway at `connection`, over the protocol the CLI speaks.
   */
  prepare(
    sandbox: AgentSandbox,
    settings: S,
    connection: AgentConnection,
    prompt: string,
  ): Promise<Record<string, string>>;
  /** How the agent said it ended, from its output. */
  outcome(stdout: string): AgentEnd;
  /**
   * The command's words besides its program and the prompt, each one shell argument, for the
   * bound on the command's size checked when a request comes in.
   */
  commandWords(settings: S): readonly string[];
  /** How many times the command holds the prompt; once when absent. */
  promptCopies?(settings: S): number;
}

/** An agent whose CLI is an npm package: the host lends its install, an E2B sandbox installs it. */
export interface PackagedAgent<S extends HarnessSettingsBase = HarnessSettingsBase>
  extends AgentBase<S> {
  /** Its CLI's pinned package. */
  readonly package: CliPackage;
  /** Its install variables, which the configuration generates. */
  readonly install: InstallDeclaration;
  /**
   * The CLI on this machine as a local sandbox is lent it, from its install variables: `null`
   * when it is not installed; throws `ConfigError` when a path they name is wrong.
   */
  findLocal(configured: AgentInstallSettings): Promise<LocalAgent | null>;
}

/** An agent that brings its own program (a command): nothing lent, nothing installed. */
export interface OwnProgramAgent<S extends HarnessSettingsBase = HarnessSettingsBase>
  extends AgentBase<S> {
  readonly package?: undefined;
  readonly install?: undefined;
  /** What a local sandbox is lent to run it: nothing. */
  findLocal(): Promise<LocalAgent | null>;
}

/** One agent: its wire habits and its harness. `S` is its parsed settings. */
export type Agent<S extends HarnessSettingsBase = HarnessSettingsBase> =
  | PackagedAgent<S>
  | OwnProgramAgent<S>;

/** An agent, its settings' type forgotten: what the runner calls. */
// deno-lint-ignore no-explicit-any
export type AnyAgent = Agent<any>;

/** The parsed settings of agent `A`. */
export type SettingsOf<A> = A extends AgentBase<infer S> ? S : never;
