/**
 * Qwen Code (`@qwen-code/qwen-code`), speaking Chat Completions.
 *
 * On the wire it sends no header naming a sub-agent; its `agent` tool starts one, whose first
 * user message quotes the call's `prompt` after the skills reminder. Its background helpers (the
 * memory extractor, the skill reviewer) are forked agents with system prompts and tools of their
 * own, which routing treats as helpers (docs/DESIGN.md §4.1).
 *
 * As a rollout's harness, the CLI (a Node.js program) runs headless in the sandbox's work tree,
 * pointed at the gateway's Chat Completions with the session's token, its settings file written
 * beside it, its stream-json log read for how it ended (the same `result` event as Claude Code's).
 *
 * @module
 */
import { z } from "zod";
import { ConfigError } from "../errors/mod.ts";
import { shellQuote } from "../shell/mod.ts";
import type { AgentConnection, PackagedAgent } from "./agent.ts";
import { COMMON_SETTINGS, ToolPattern } from "./common_settings.ts";
import {
  configuredFile,
  type InstallDeclaration,
  installVariables,
  type LocalAgent,
} from "./install.ts";
import { readAgentLog } from "./result_event.ts";

/**
 * Qwen Code's settings when a request gives none: no background memory or skill agents (each
 * an extra conversation that is not the task's, and files outside the work tree), no usage
 * statistics.
 */
export const DEFAULT_QWEN_SETTINGS: Readonly<Record<string, unknown>> = Object.freeze({
  memory: { enableManagedAutoMemory: false, enableManagedAutoDream: false, enableAutoSkill: false },
  privacy: { usageStatisticsEnabled: false },
});

/** Qwen Code, headless, speaking Chat Completions. */
export const QwenCodeSettingsSchema = z.strictObject({
  harness: z.literal("qwen_code"),
  ...COMMON_SETTINGS,
  /** Qwen Code's `--max-session-turns`. */
  max_turns: z.number().int().min(1).max(100_000).optional(),
  /** Qwen Code's `--approval-mode`. */
  approval_mode: z.enum(["yolo", "auto-edit", "auto", "default", "plan"]).default("yolo"),
  /** Qwen Code's `--allowed-tools` (run without asking). */
  allowed_tools: z.array(ToolPattern).max(200).optional(),
  /** Qwen Code's `--exclude-tools`. */
  exclude_tools: z.array(ToolPattern).max(200).default([]),
  /** Qwen Code's `settings.json`, given as its system settings (they override the user's). */
  settings: z.record(z.string(), z.unknown()).default(() => structuredClone(DEFAULT_QWEN_SETTINGS)),
});

/** Qwen Code's settings. */
export type QwenCodeSettings = z.output<typeof QwenCodeSettingsSchema>;

/** The variable naming the `node` that runs Qwen Code in local sandboxes. */
const NODE_BIN = "NODE_BIN";

/** Qwen Code's install variables: `QWEN_CODE_BIN`, `_PACKAGE`, `_TARBALL`, and `NODE_BIN`. */
const INSTALL: InstallDeclaration = {
  prefix: "QWEN_CODE",
  bin: {
    shown: "the install `tools/setup.ts` makes",
    meaning: "the host's Qwen Code (its `qwen` link or `cli-entry.js`); its `node_modules` is " +
      "lent read-only to local sandboxes",
  },
  tarball: {},
  extra: [{
    variable: NODE_BIN,
    shown: "the first `node` on `PATH`",
    meaning: "the `node` lent read-only to local sandboxes to run Qwen Code",
  }],
};

/** Qwen Code (`qwen_code`). */
export const QWEN_CODE: PackagedAgent<QwenCodeSettings> = {
  name: "qwen_code",
  title: "Qwen Code",
  agentHeaders: null,
  dispatchTools: [{ name: "agent", taskField: "prompt" }],
  settings: QwenCodeSettingsSchema,
  package: {
    folder: "qwen-code",
    name: "@qwen-code/qwen-code",
    bin: "qwen",
    // Its clipboard dependency lists optional binaries for platforms the registry lacks.
    ci: false,
    testsOnly: false,
    afterInstall: makeRipgrepExecutable,
  },
  install: INSTALL,
  installHint: "run tools/setup.ts or set QWEN_CODE_BIN",
  async findLocal(configured) {
    const node = await findNode(await configuredFile(NODE_BIN, configured.extra[NODE_BIN] ?? null));
    const install = node === null ? null : await findQwenCode(configured.bin, node);
    if (configured.bin !== null && install === null) {
      const variable = installVariables(INSTALL).bin;
      throw new ConfigError(
        variable,
        node === null
          ? `Invalid ${variable}: no node on PATH to run it (set ${NODE_BIN})`
          : `Invalid ${variable}: no Qwen Code (node_modules/${ENTRY}) at "${configured.bin}"`,
      );
    }
    return install === null ? null : qwenCodeLocal(install);
  },
  command: (settings, run) => qwenCodeCommand(run.program, settings, run.prompt),
  async prepare(sandbox, settings, connection) {
    const path = qwenSettingsPath(sandbox.tmpdir);
    await sandbox.writeFile(path, JSON.stringify(settings.settings));
    return qwenCodeEnv(settings, connection, path);
  },
  outcome: readAgentLog,
  commandWords: (settings) => [
    (settings.allowed_tools ?? []).join(","),
    settings.exclude_tools.join(","),
  ],
};

/**
 * Qwen Code's package (0.24.4) ships its ripgrep without the executable bit, so its search tool
 * cannot spawn it and falls back to a slower built-in grep. Set by `tools/setup.ts`, where the
 * package is writable (a sandbox only reads it).
 */
async function makeRipgrepExecutable(nodeModules: string): Promise<void> {
  const vendor = `${nodeModules}/@qwen-code/qwen-code/vendor/ripgrep/`;
  try {
    for await (const platform of Deno.readDir(vendor)) {
      const rg = `${vendor}${platform.name}/rg`;
      const mode = (await Deno.stat(rg).catch(() => null))?.mode;
      if (mode != null && (mode & 0o111) === 0) await Deno.chmod(rg, mode | 0o755);
    }
  } catch { /* not installed */ }
}

/** The CLI's entry point inside its package. */
const ENTRY = "@qwen-code/qwen-code/cli-entry.js";
/** Where a local sandbox shows the host's `node` and the CLI's `node_modules`. */
const NODE_INSIDE = "/sandbox/tools/node";
const MODULES_INSIDE = "/sandbox/tools/qwen-code/node_modules";

/** Qwen Code on this machine: the `node` that runs it and the `node_modules` that holds it. */
export interface QwenCodeInstall {
  readonly node: string;
  readonly nodeModules: string;
}

/**
 * The pinned CLI on this machine, run by `node`: `configured` (its `qwen` link or
 * `cli-entry.js`) when given, else the install in `tools/qwen-code`. `null` when it is missing.
 */
export async function findQwenCode(
  configured: string | null,
  node: string,
): Promise<QwenCodeInstall | null> {
  const entry = configured ??
    new URL(`../../tools/qwen-code/node_modules/${ENTRY}`, import.meta.url).pathname;
  try {
    const real = await Deno.realPath(entry);
    if (!real.endsWith(`/node_modules/${ENTRY}`) || !(await Deno.stat(real)).isFile) return null;
    return { node, nodeModules: real.slice(0, -ENTRY.length - 1) };
  } catch {
    return null;
  }
}

/** The `node` binary (its real path): `configured` when given, else the first on PATH; or `null`. */
export async function findNode(configured: string | null): Promise<string | null> {
  const candidates = configured !== null
    ? [configured]
    : (Deno.env.get("PATH") ?? "").split(":").filter((dir) => dir.startsWith("/")).map((dir) =>
      `${dir}/node`
    );
  for (const path of candidates) {
    try {
      if ((await Deno.stat(path)).isFile) return await Deno.realPath(path);
    } catch { /* the next one */ }
  }
  return null;
}

/** What a local sandbox is lent: `node` and the CLI's modules, read-only; how to run it there. */
export function qwenCodeLocal(install: QwenCodeInstall): LocalAgent {
  return {
    binds: [
      { host: install.node, inside: NODE_INSIDE },
      { host: install.nodeModules, inside: MODULES_INSIDE },
    ],
    program: `${NODE_INSIDE} ${MODULES_INSIDE}/${ENTRY}`,
  };
}

/** The shell command that runs the CLI (`program`, shell words) headless with `prompt`. */
export function qwenCodeCommand(
  program: string,
  settings: QwenCodeSettings,
  prompt: string,
): string {
  const args = ["--approval-mode", settings.approval_mode, "--output-format", "stream-json"];
  if (settings.max_turns !== undefined) {
    args.push("--max-session-turns", String(settings.max_turns));
  }
  // One `--name=value` per tool: a bare array option would also take the prompt as a tool.
  for (const tool of settings.allowed_tools ?? []) args.push(`--allowed-tools=${tool}`);
  for (const tool of settings.exclude_tools) args.push(`--exclude-tools=${tool}`);
  // `--prompt=` keeps a prompt that starts with `-` a prompt (after `--` the CLI sees none).
  return [program, ...[...args, `--prompt=${prompt}`].map(shellQuote)].join(" ");
}

/** Where the harness writes the CLI's settings, in the sandbox's temporary folder. */
export function qwenSettingsPath(tmpdir: string): string {
  return `${tmpdir}/qwen-code-settings.json`;
}

/**
 * The CLI's environment: the gateway as its OpenAI API (`/v1`), the session token as its key,
 * its settings file as the system settings (which override any the user has).
 */
export function qwenCodeEnv(
  settings: QwenCodeSettings,
  connection: AgentConnection,
  settingsPath: string,
): Record<string, string> {
  return {
    OPENAI_BASE_URL: `${connection.baseUrl}/v1`,
    OPENAI_API_KEY: connection.token,
    OPENAI_MODEL: settings.model ?? connection.model,
    QWEN_CODE_SYSTEM_SETTINGS_PATH: settingsPath,
    // Otherwise every run reports usage statistics to an Alibaba host.
    QWEN_USAGE_STATISTICS_ENABLED: "false",
    QWEN_CODE_SUPPRESS_YOLO_WARNING: "1",
    ...settings.env,
  };
}
