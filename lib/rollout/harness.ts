/**
 * The agent harnesses of `/rollout`, one vocabulary over each agent: where it comes from (lent by
 * the host to a local sandbox; installed with npm, or unpacked, in an E2B one), what runs it
 * headless against the gateway (its command, its environment, the files it reads), and how it
 * said it ended.
 *
 * @module
 */
import type { Task } from "../evaluate/mod.ts";
import type { HostBind, Sandbox } from "../sandbox/mod.ts";
import { type AgentConnection, claudeCodeCommand, claudeCodeEnv } from "./claude_code.ts";
import { codexCommand, codexEnv, codexHarnessConfig, readCodexLog } from "./codex.ts";
import { agentCommandLine, commandEnv, promptFilePath } from "./command.ts";
import { qwenCodeCommand, qwenCodeEnv, qwenSettingsPath } from "./qwen_code.ts";
import type { AgentOutcome } from "./records.ts";
import { type CliHarness, type CliSettings, PROBLEM_FILE } from "./request.ts";

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

/** Every harness's install. */
export type AgentInstalls = Readonly<Record<CliHarness, AgentInstall>>;

/** Each harness's name for people, and how its CLI gets onto this machine. */
export const HARNESSES: Readonly<Record<CliHarness, { title: string; install: string }>> = {
  claude_code: { title: "Claude Code", install: "run tools/setup.ts or set CLAUDE_CODE_BIN" },
  qwen_code: { title: "Qwen Code", install: "run tools/setup.ts or set QWEN_CODE_BIN" },
  codex: {
    title: "Codex",
    install: "run tools/setup.ts --tests (or npm ci --prefix tools/codex) or set CODEX_BIN",
  },
  command: { title: "The command", install: "it brings its own program" },
};

/** The prompt: the template with the task's problem statement filled in. */
export function fillPrompt(template: string, task: Task): string {
  return template.replaceAll("{problem_statement}", task.problem_statement)
    .replaceAll("{problem_file}", PROBLEM_FILE);
}

/** Where the agent runs: its program (shell words), its prompt, the sandbox's temporary folder. */
export interface AgentRun {
  readonly program: string;
  readonly prompt: string;
  readonly tmpdir: string;
}

/** The shell command that runs the agent headless with its prompt. */
export function agentCommand(settings: CliSettings, run: AgentRun): string {
  switch (settings.harness) {
    case "claude_code":
      return claudeCodeCommand(run.program, settings, run.prompt);
    case "qwen_code":
      return qwenCodeCommand(run.program, settings, run.prompt);
    case "codex":
      return codexCommand(run.program, settings, run.prompt);
    case "command":
      return agentCommandLine(settings, run.prompt, promptFilePath(run.tmpdir));
  }
}

/**
 * Writes into `sandbox` the files the agent reads besides its command (Qwen Code's settings,
 * Codex's config.toml, a command's prompt file) and resolves to its environment: the gateway at
 * `connection`, over the protocol the CLI speaks.
 */
export async function prepareAgent(
  sandbox: Sandbox,
  settings: CliSettings,
  connection: AgentConnection,
  prompt: string,
): Promise<Record<string, string>> {
  switch (settings.harness) {
    case "claude_code":
      return claudeCodeEnv(settings, connection);
    case "qwen_code": {
      const path = qwenSettingsPath(sandbox.tmpdir);
      await sandbox.writeFile(path, JSON.stringify(settings.settings));
      return qwenCodeEnv(settings, connection, path);
    }
    case "codex": {
      const home = `${sandbox.tmpdir}/codex-home`;
      await sandbox.writeFile(`${home}/config.toml`, codexHarnessConfig(settings, connection));
      return codexEnv(settings, connection, home);
    }
    case "command":
      await sandbox.writeFile(promptFilePath(sandbox.tmpdir), prompt);
      return commandEnv(settings, connection);
  }
}

/** How the agent said it ended, from its output. */
export function readAgentOutcome(
  settings: CliSettings,
  stdout: string,
): Pick<AgentOutcome, "numTurns" | "result"> {
  switch (settings.harness) {
    case "claude_code":
    case "qwen_code":
      return readAgentLog(stdout);
    case "codex":
      return readCodexLog(stdout);
    case "command":
      return { numTurns: null, result: null };
  }
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
