/**
 * Claude Code (`@anthropic-ai/claude-code`), speaking the Messages API.
 *
 * On the wire it names each sub-agent's requests with `x-claude-code-agent-id` (and a nested
 * one's parent with `x-claude-code-parent-agent-id`), and starts sub-agents with its `Agent` tool
 * (`Task` in earlier versions), whose `prompt` is the sub-agent's task.
 *
 * As a rollout's harness, the CLI runs headless in the sandbox's work tree, pointed at the
 * gateway with the session's token, its settings from the request.
 *
 * @module
 */
import { z } from "zod";
import { shellQuote } from "../shell/mod.ts";
import type { AgentConnection, PackagedAgent } from "./agent.ts";
import { COMMON_SETTINGS, ToolPattern } from "./common_settings.ts";
import {
  configuredFile,
  type InstallDeclaration,
  installVariables,
  lentProgram,
} from "./install.ts";
import { readAgentLog } from "./result_event.ts";

/** Where a local sandbox shows the host's Claude Code binary. */
export const CLAUDE_INSIDE = "/sandbox/tools/claude";

/** Claude Code, headless, speaking the Messages API. */
export const ClaudeCodeSettingsSchema = z.strictObject({
  harness: z.literal("claude_code"),
  ...COMMON_SETTINGS,
  /** Claude Code's `--max-turns`. */
  max_turns: z.number().int().min(1).max(100_000).optional(),
  /** Claude Code's `--permission-mode`. */
  permission_mode: z.enum(["bypassPermissions", "acceptEdits", "default", "plan"]).default(
    "bypassPermissions",
  ),
  /** Claude Code's `--allowedTools`. */
  allowed_tools: z.array(ToolPattern).max(200).optional(),
  /** Claude Code's `--disallowedTools`. */
  disallowed_tools: z.array(ToolPattern).max(200).default([]),
  /** `CLAUDE_CODE_AUTO_COMPACT_WINDOW` (Claude Code's minimum is 100000). */
  auto_compact_window: z.number().int().min(100_000).max(10_000_000).optional(),
});

/** Claude Code's settings. */
export type ClaudeCodeSettings = z.output<typeof ClaudeCodeSettingsSchema>;

/** Claude Code's install variables: `CLAUDE_CODE_BIN`, `_PACKAGE`, `_TARBALL`. */
const INSTALL: InstallDeclaration = {
  prefix: "CLAUDE_CODE",
  bin: {
    shown: "the binary `tools/setup.ts` installs",
    meaning: "the host's Claude Code binary, lent read-only to local sandboxes",
  },
  tarball: { of: "the CLI", inside: "native binary inside" },
};

/** Claude Code (`claude_code`, the default harness). */
export const CLAUDE_CODE: PackagedAgent<ClaudeCodeSettings> = {
  name: "claude_code",
  title: "Claude Code",
  agentHeaders: { id: "x-claude-code-agent-id", parentId: "x-claude-code-parent-agent-id" },
  dispatchTools: [
    { name: "Agent", taskField: "prompt" },
    { name: "Task", taskField: "prompt" },
  ],
  settings: ClaudeCodeSettingsSchema,
  package: {
    folder: "claude-code",
    name: "@anthropic-ai/claude-code",
    bin: "claude",
    ci: true,
    testsOnly: false,
  },
  install: INSTALL,
  installHint: "run tools/setup.ts or set CLAUDE_CODE_BIN",
  async findLocal(configured) {
    const binary = await findClaudeBinary(
      await configuredFile(installVariables(INSTALL).bin, configured.bin),
    );
    return binary === null ? null : lentProgram(binary, CLAUDE_INSIDE);
  },
  command: (settings, run) => claudeCodeCommand(run.program, settings, run.prompt),
  prepare: (_sandbox, settings, connection) => Promise.resolve(claudeCodeEnv(settings, connection)),
  outcome: readAgentLog,
  commandWords: (settings) => [
    (settings.allowed_tools ?? []).join(","),
    settings.disallowed_tools.join(","),
  ],
};

/**
 * The pinned CLI's binary on this machine (its real path): `configured` when given, else the
 * platform binary that `npm ci` put in `tools/claude-code` (or its npm bin link), else `null`.
 */
export async function findClaudeBinary(configured: string | null): Promise<string | null> {
  const tools = new URL("../../tools/claude-code/node_modules/", import.meta.url).pathname;
  const arch = Deno.build.arch === "aarch64" ? "arm64" : "x64";
  const candidates = configured !== null ? [configured] : [
    `${tools}@anthropic-ai/claude-code-linux-${arch}/claude`,
    `${tools}@anthropic-ai/claude-code-linux-${arch}-musl/claude`,
    `${tools}.bin/claude`,
  ];
  for (const path of candidates) {
    try {
      if ((await Deno.stat(path)).isFile) return await Deno.realPath(path);
    } catch { /* try the next one */ }
  }
  return null;
}

/** The shell command that runs the CLI (`program`, a shell word) headless with `prompt`. */
export function claudeCodeCommand(
  program: string,
  settings: ClaudeCodeSettings,
  prompt: string,
): string {
  const args = [
    "-p",
    prompt,
    "--output-format",
    "stream-json",
    "--verbose",
    "--permission-mode",
    settings.permission_mode,
  ];
  if (settings.max_turns !== undefined) args.push("--max-turns", String(settings.max_turns));
  if (settings.allowed_tools?.length) args.push("--allowedTools", settings.allowed_tools.join(","));
  if (settings.disallowed_tools.length > 0) {
    args.push("--disallowedTools", settings.disallowed_tools.join(","));
  }
  return [program, ...args.map(shellQuote)].join(" ");
}

/** The CLI's environment: the gateway as its Anthropic API, the session token as its key. */
export function claudeCodeEnv(
  settings: ClaudeCodeSettings,
  connection: AgentConnection,
): Record<string, string> {
  const model = settings.model ?? connection.model;
  return {
    ANTHROPIC_BASE_URL: connection.baseUrl,
    ANTHROPIC_AUTH_TOKEN: connection.token,
    ANTHROPIC_MODEL: model,
    ANTHROPIC_SMALL_FAST_MODEL: model,
    DISABLE_TELEMETRY: "1",
    DISABLE_AUTOUPDATER: "1",
    CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC: "1",
    // --permission-mode bypassPermissions refuses to start as root without it.
    IS_SANDBOX: "1",
    ...(settings.auto_compact_window !== undefined
      ? { CLAUDE_CODE_AUTO_COMPACT_WINDOW: String(settings.auto_compact_window) }
      : {}),
    ...settings.env,
  };
}
