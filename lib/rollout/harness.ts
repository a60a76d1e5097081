/**
 * What an agent harness of `/rollout` is: one record per agent CLI that says where the CLI comes
 * from (lent by the host to a local sandbox; installed with npm, or unpacked, in an E2B one), the
 * settings a request gives it, what runs it headless against the gateway (its command, its
 * environment, the files it reads), and how it said it ended. `harnesses.ts` registers them.
 *
 * @module
 */
import { z } from "zod";
import type { RolloutConfig } from "../config/mod.ts";
import { ConfigError } from "../errors/mod.ts";
import type { Task } from "../evaluate/mod.ts";
import type { HostBind, Sandbox } from "../sandbox/mod.ts";
import type { AgentOutcome } from "./records.ts";

/** Where the agent finds the issue, in its work tree; left out of the patch. */
export const PROBLEM_FILE = "PROBLEM_STATEMENT.md";

/** The prompt of a task that gives none: `{problem_statement}` is filled from the task. */
export const DEFAULT_PROMPT = [
  "Resolve the following issue in the repository in the current directory.",
  "",
  "{problem_statement}",
  "",
  `(The issue is also in ${PROBLEM_FILE}.) Make the change in the working tree; do not commit it.`,
].join("\n");

/** An environment variable's name. */
export const ENV_NAME = /^[A-Za-z_][A-Za-z0-9_]*$/;

/** Longest prompt template, in characters. */
export const MAX_PROMPT_TEMPLATE_CHARS = 16_384;
/** Longest tool pattern of `allowed_tools` / `disallowed_tools`, in characters. */
export const MAX_TOOL_PATTERN_CHARS = 256;

/** One tool pattern of a CLI's allow or deny list (`Bash`, `Bash(git:*)`). */
export const ToolPattern = z.string().max(MAX_TOOL_PATTERN_CHARS).regex(
  /^[^,\s]+(?:\([^)]*\))?$/,
);

/** Settings every harness has; a harness's schema spreads them beside its own. */
export const COMMON_SETTINGS = {
  /** The prompt; `{problem_statement}` and `{problem_file}` are filled in. */
  prompt_template: z.string().min(1).max(MAX_PROMPT_TEMPLATE_CHARS).default(DEFAULT_PROMPT),
  /** The model id the agent asks for; the gateway's `MODEL_ID` when unset. */
  model: z.string().regex(/^\S{1,256}$/).optional(),
  /** More environment variables for the agent. */
  env: z.record(z.string().regex(ENV_NAME), z.string().max(100_000)).default({}),
};

/** The settings every harness's parsed settings have. */
export interface HarnessSettingsBase {
  readonly harness: string;
  readonly prompt_template: string;
  readonly model?: string;
  readonly env: Readonly<Record<string, string>>;
}

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

/** How an E2B sandbox without the CLI installs it with npm. */
export interface NpmInstall {
  /** The npm spec installed from the registry when there is no tarball. */
  readonly package: string;
  /** A tarball of the CLI on the gateway's host, uploaded and installed offline; or `null`. */
  readonly tarball: string | null;
  /** The command the package installs (`claude`, `qwen`, `codex`). */
  readonly bin: string;
  /**
   * The binary's path inside the tarball's `package/` folder when the tarball is unpacked rather
   * than installed (Codex's platform package holds a static binary and nothing to install).
   */
  readonly unpack?: string;
}

/** The host's CLI as a local sandbox sees it. */
export interface LocalAgent {
  /** Host files shown read-only inside. */
  readonly binds: readonly HostBind[];
  /** Shell words that run the CLI inside. */
  readonly program: string;
}

/** Where one harness's CLI comes from. */
export interface AgentInstall {
  /** The CLI on this machine, lent to local sandboxes; `null` when it is not installed. */
  readonly local: LocalAgent | null;
  /** How an E2B sandbox gets it; `null` when there is nothing to install (a command). */
  readonly npm: NpmInstall | null;
}

/**
 * A harness's CLI as an npm package pinned in `tools/<folder>/package.json` — the one place its
 * version is written: `tools/setup.ts` installs (and, for the tests, packs) it from there, and an
 * E2B sandbox without the CLI installs that version unless the configuration names another.
 */
export interface CliPackage {
  /** The folder under `tools/` whose `package.json` pins it. */
  readonly folder: string;
  /** The npm package. */
  readonly name: string;
  /** The command the package installs. */
  readonly bin: string;
  /**
   * Installed with `npm ci`; `false`: `npm install --no-save`, for a package whose other
   * platforms' optional binaries are not on the registry (npm cannot lock them, `npm ci` refuses).
   */
  readonly ci: boolean;
  /** Only the tests need it (`tools/setup.ts --tests` installs it); serving lends what is there. */
  readonly testsOnly: boolean;
  /** The package packed for offline installs when not `name` (Codex's platform package). */
  readonly packed?: string;
  /** The binary's path inside the packed package when it is unpacked rather than installed. */
  readonly unpack?: string;
  /** A step after npm installed it, given its `node_modules` (Qwen Code's ripgrep's mode). */
  readonly afterInstall?: (nodeModules: string) => Promise<void>;
}

/** What a harness's E2B install reads from the configuration: its npm spec and its tarball. */
export interface RemoteInstall {
  /** The configured npm spec; `null`: the version `tools/<folder>/package.json` pins. */
  readonly package: string | null;
  /** The configured tarball, and the variable that names it (checked at start-up). */
  readonly tarball: { readonly path: string | null; readonly variable: string };
}

/**
 * One agent harness: its name in requests, its settings, where its CLI comes from, and how a run
 * of it goes. `S` is its parsed settings.
 */
export interface Harness<S extends HarnessSettingsBase = HarnessSettingsBase> {
  /** The `agent.harness` of a request. */
  readonly name: S["harness"];
  /** Its name for people. */
  readonly title: string;
  /** Its settings: a strict object with `harness: z.literal(name)` and {@linkcode COMMON_SETTINGS}. */
  readonly settings: z.ZodType<S, unknown>;
  /** Its CLI's pinned package; absent for a harness that brings its own program. */
  readonly package?: CliPackage;
  /** How an operator gets it onto this machine, told when a local sandbox lacks it. */
  readonly installHint: string;
  /**
   * The CLI on this machine as a local sandbox is lent it, from the configuration: `null` when
   * it is not installed; throws {@linkcode ConfigError} when a path the configuration names is
   * wrong.
   */
  findLocal(rollout: RolloutConfig): Promise<LocalAgent | null>;
  /** What an E2B sandbox installs, from the configuration; absent with no package. */
  remote?(rollout: RolloutConfig): RemoteInstall;
  /** The shell command that runs the agent headless with its prompt. */
  command(settings: S, run: AgentRun): string;
  /**
   * Writes into `sandbox` the files the agent reads besides its command and resolves to its
   * environment: the gateway at `connection`, over the protocol the CLI speaks.
   */
  prepare(
    sandbox: Sandbox,
    settings: S,
    connection: AgentConnection,
    prompt: string,
  ): Promise<Record<string, string>>;
  /** How the agent said it ended, from its output. */
  outcome(stdout: string): Pick<AgentOutcome, "numTurns" | "result">;
  /**
   * The command's words besides its program and the prompt, each one shell argument, for the
   * bound on the command's size checked when a request comes in.
   */
  commandWords(settings: S): readonly string[];
  /** How many times the command holds the prompt; once when absent. */
  promptCopies?(settings: S): number;
}

/** A harness, its settings' type forgotten: what the runner calls. */
// deno-lint-ignore no-explicit-any
export type AnyHarness = Harness<any>;

/** The parsed settings of harness `H`. */
export type SettingsOf<H> = H extends Harness<infer S> ? S : never;

/** The prompt: the template with the task's problem statement filled in. */
export function fillPrompt(template: string, task: Task): string {
  return template.replaceAll("{problem_statement}", task.problem_statement)
    .replaceAll("{problem_file}", PROBLEM_FILE);
}

/**
 * How the agent said it ended: the last `result` event of its stream-json output (Claude Code's
 * and Qwen Code's are the same).
 */
export function readAgentLog(
  stdout: string,
): Pick<AgentOutcome, "numTurns" | "result"> {
  let numTurns: number | null = null;
  let result: string | null = null;
  for (const line of stdout.split("\n")) {
    if (!line.startsWith("{") || !line.includes('"result"')) continue;
    try {
      const event = JSON.parse(line);
      if (event.type !== "result") continue;
      numTurns = typeof event.num_turns === "number" ? event.num_turns : null;
      result = typeof event.subtype === "string" ? event.subtype : null;
    } catch { /* a line cut by the output cap */ }
  }
  return { numTurns, result };
}

/** A program on the host, bound into a local sandbox at `inside` and run from there. */
export function lentProgram(host: string, inside: string): LocalAgent {
  return { binds: [{ host, inside }], program: inside };
}

/** `path` is a file, or `null` when the configuration left it unset. */
export async function configuredFile(
  variable: string,
  path: string | null,
): Promise<string | null> {
  if (path === null) return null;
  try {
    if ((await Deno.stat(path)).isFile) return path;
  } catch { /* refused below */ }
  throw new ConfigError(variable, `Invalid ${variable}: no file at "${path}"`);
}

/** The folder `tools/<folder>/` of this checkout. */
export function toolsFolder(folder: string): string {
  return new URL(`../../tools/${folder}/`, import.meta.url).pathname;
}

/** `<name>@<version>` as `tools/<folder>/package.json` pins it. */
export async function pinnedSpec(pkg: CliPackage): Promise<string> {
  const manifest = `${toolsFolder(pkg.folder)}package.json`;
  try {
    const version = JSON.parse(await Deno.readTextFile(manifest)).dependencies?.[pkg.name];
    if (typeof version === "string" && version !== "") return `${pkg.name}@${version}`;
  } catch { /* refused below */ }
  throw new Error(`${manifest} does not pin ${pkg.name}`);
}

/**
 * Where `harness`'s CLI comes from: the host's install (lent to local sandboxes; a default one
 * may be missing, and its harness then answers `agent_unavailable` there) and what E2B sandboxes
 * install (the configured spec, else the pinned one; a configured tarball must exist).
 */
export async function resolveInstall(
  harness: AnyHarness,
  rollout: RolloutConfig,
): Promise<AgentInstall> {
  const local = await harness.findLocal(rollout);
  if (harness.package === undefined || harness.remote === undefined) return { local, npm: null };
  const remote = harness.remote(rollout);
  const tarball = await configuredFile(remote.tarball.variable, remote.tarball.path);
  return {
    local,
    npm: {
      package: remote.package ?? await pinnedSpec(harness.package),
      tarball,
      bin: harness.package.bin,
      ...(harness.package.unpack === undefined ? {} : { unpack: harness.package.unpack }),
    },
  };
}
