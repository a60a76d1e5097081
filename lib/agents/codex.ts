/**
 * Codex (`@openai/codex`), speaking the Responses API.
 *
 * On the wire, with `[agents]` on, it offers its sub-agent tools in a `namespace` tool
 * (`multi_agent_v1`, shown to the model by their plain names): `spawn_agent`, whose `message` (or
 * the text of its `items`) is the sub-agent's task, then `wait_agent`, `send_input`,
 * `close_agent`. A sub-agent's requests carry its own thread id in `thread-id` and its parent's in
 * `x-codex-parent-thread-id`; the root agent sends its thread id in `thread-id` too, with no
 * parent, so only a request naming a parent names a sub-agent. A sub-agent has the root's system
 * prompt: without its thread id it would look like the root's own new conversation.
 *
 * As a rollout's harness, the CLI's native binary runs headless (`codex exec --json`) in the
 * sandbox's work tree, with a config.toml of its own that makes the gateway its model provider
 * over the Responses API (the session token read from an environment variable), turns off
 * everything that would reach another host, and leaves the sandboxing to the rollout's sandbox.
 * Its JSONL log says how it ended (`turn.completed` or `turn.failed`).
 *
 * @module
 */
import { z } from "zod";
import { shellQuote } from "../shell/mod.ts";
import type { AgentConnection, AgentEnd, PackagedAgent } from "./agent.ts";
import { COMMON_SETTINGS } from "./common_settings.ts";
import {
  configuredFile,
  type InstallDeclaration,
  installVariables,
  lentProgram,
} from "./install.ts";

/** A TOML value of a `-c key=value` override: a string, a number or a boolean. */
const TomlScalar = z.union([z.string().max(4096), z.number().finite(), z.boolean()]);

/** Codex, headless (`codex exec`), speaking the Responses API. */
export const CodexSettingsSchema = z.strictObject({
  harness: z.literal("codex"),
  ...COMMON_SETTINGS,
  /**
   * More config.toml settings, each given as `-c key=value` (dotted keys reach into tables:
   * `model_reasoning_effort`, `model_providers.gateway.stream_idle_timeout_ms`).
   */
  config: z.record(z.string().regex(/^[A-Za-z0-9_-]+(?:\.[A-Za-z0-9_-]+)*$/).max(256), TomlScalar)
    .default({}),
});

/** Codex's settings. */
export type CodexSettings = z.output<typeof CodexSettingsSchema>;

/** Codex's install variables: `CODEX_BIN`, `_PACKAGE`, `_TARBALL`. */
const INSTALL: InstallDeclaration = {
  prefix: "CODEX",
  bin: {
    shown: "the binary `tools/setup.ts --tests` installs",
    meaning: "the host's Codex binary (the native one, from `@openai/codex-linux-<arch>`), lent " +
      "read-only to local sandboxes",
  },
  tarball: { of: "Codex's platform package", inside: "its static binary inside" },
};

/** Codex (`codex`). */
export const CODEX: PackagedAgent<CodexSettings> = {
  name: "codex",
  title: "Codex",
  agentHeaders: { id: "thread-id", parentId: "x-codex-parent-thread-id", onlyWithParent: true },
  dispatchTools: [
    { name: "spawn_agent", taskField: "message" },
    { name: "spawn_agent", taskField: "items" },
  ],
  settings: CodexSettingsSchema,
  package: {
    folder: "codex",
    name: "@openai/codex",
    bin: "codex",
    ci: true,
    testsOnly: true,
    // Its native binary is the platform package npm picks; that package is packed, and unpacked.
    packed: `@openai/codex-linux-${Deno.build.arch === "aarch64" ? "arm64" : "x64"}`,
    unpack: codexVendorPath(),
  },
  install: INSTALL,
  installHint: "run tools/setup.ts --tests (or npm ci --prefix tools/codex) or set CODEX_BIN",
  async findLocal(configured) {
    const binary = await findCodex(
      await configuredFile(installVariables(INSTALL).bin, configured.bin),
    );
    return binary === null ? null : lentProgram(binary, CODEX_INSIDE);
  },
  command: (settings, run) => codexCommand(run.program, settings, run.prompt),
  async prepare(sandbox, settings, connection) {
    const home = `${sandbox.tmpdir}/codex-home`;
    await sandbox.writeFile(`${home}/config.toml`, codexHarnessConfig(settings, connection));
    return codexEnv(settings, connection, home);
  },
  outcome: readCodexLog,
  commandWords: (settings) => [
    Object.entries(settings.config).map(([key, value]) => `${key}=${JSON.stringify(value)}`)
      .join(","),
  ],
};

/** Where a local sandbox shows the host's Codex binary. */
export const CODEX_INSIDE = "/sandbox/tools/codex";

/** The environment variable the config names for the provider's key. */
export const CODEX_KEY_ENV = "ROLLOUT_GATEWAY_TOKEN";

/** The native binary's place in the platform package (`@openai/codex-linux-<arch>`). */
export function codexVendorPath(): string {
  const arch = Deno.build.arch === "aarch64" ? "aarch64" : "x86_64";
  return `vendor/${arch}-unknown-linux-musl/bin/codex`;
}

/**
 * The pinned CLI's native binary on this machine (its real path): `configured` when given, else
 * the one `npm ci` put in `tools/codex`; `null` when missing.
 */
export async function findCodex(configured: string | null): Promise<string | null> {
  const platform = Deno.build.arch === "aarch64" ? "linux-arm64" : "linux-x64";
  const path = configured ??
    new URL(
      `../../tools/codex/node_modules/@openai/codex-${platform}/${codexVendorPath()}`,
      import.meta.url,
    ).pathname;
  try {
    return (await Deno.stat(path)).isFile ? await Deno.realPath(path) : null;
  } catch {
    return null;
  }
}

/**
 * The config.toml of a run: the gateway as the `gateway` provider (`baseUrl` ends in `/v1`), the
 * served model's context window, approvals off and no sandbox of Codex's own (the rollout's
 * sandbox is the sandbox), and off: update checks, analytics, feedback, history, telemetry, web
 * search, sub-agents (unless `agents`: its `spawn_agent` tools, which the gateway serves as
 * sub-agent chains), plugins, memories. `maxRetries` caps Codex's request and stream retries (its
 * defaults otherwise).
 */
export function codexConfig(options: {
  baseUrl: string;
  model: string;
  contextWindow: number;
  maxRetries?: number;
  agents?: boolean;
}): string {
  const retries = options.maxRetries === undefined
    ? ""
    : `request_max_retries = ${options.maxRetries}\nstream_max_retries = ${options.maxRetries}\n`;
  return `model = ${JSON.stringify(options.model)}
model_provider = "gateway"
approval_policy = "never"
sandbox_mode = "danger-full-access"
check_for_update_on_startup = false
web_search = "disabled"
model_reasoning_summary = "none"
model_context_window = ${options.contextWindow}
forced_login_method = "api"

[agents]
enabled = ${options.agents === true}

[analytics]
enabled = false

[feedback]
enabled = false

[history]
persistence = "none"

[otel]
exporter = "none"
log_user_prompt = false

[features]
goals = false
apps = false
plugins = false
memories = false
shell_snapshot = false
image_generation = false

[model_providers.gateway]
name = "Rollout Gateway"
base_url = ${JSON.stringify(options.baseUrl)}
env_key = "${CODEX_KEY_ENV}"
wire_api = "responses"
${retries}`;
}

/** The config.toml a harness run writes: the gateway's `/v1`, the model asked for. */
export function codexHarnessConfig(settings: CodexSettings, connection: AgentConnection): string {
  return codexConfig({
    baseUrl: `${connection.baseUrl}/v1`,
    model: settings.model ?? connection.model,
    contextWindow: connection.contextLength,
  });
}

/**
 * The shell command that runs the CLI (`program`, shell words) headless with `prompt`: JSONL
 * events, no approvals and no sandbox of its own, unknown config keys refused, each `config`
 * entry as a `-c` override, the prompt after `--` (so one that starts with `-` or names a
 * subcommand stays the prompt), and an empty stdin (Codex reads a non-terminal stdin as more
 * prompt).
 */
export function codexCommand(program: string, settings: CodexSettings, prompt: string): string {
  const args = [
    "exec",
    "--json",
    "--dangerously-bypass-approvals-and-sandbox",
    "--strict-config",
    "--skip-git-repo-check",
  ];
  for (const [key, value] of Object.entries(settings.config)) {
    args.push("-c", `${key}=${typeof value === "string" ? JSON.stringify(value) : String(value)}`);
  }
  return [program, ...[...args, "--", prompt].map(shellQuote), "</dev/null"].join(" ");
}

/** The CLI's environment: its home (with the config), the session token as the provider's key. */
export function codexEnv(
  settings: CodexSettings,
  connection: AgentConnection,
  home: string,
): Record<string, string> {
  return { CODEX_HOME: home, [CODEX_KEY_ENV]: connection.token, ...settings.env };
}

/**
 * How Codex said it ended: `success` for a last `turn.completed`, `error` for `turn.failed`;
 * the model requests it made are not in its log (`numTurns` stays `null`).
 */
export function readCodexLog(stdout: string): AgentEnd {
  let result: string | null = null;
  for (const line of stdout.split("\n")) {
    if (!line.startsWith('{"type":"turn.')) continue;
    try {
      const event = JSON.parse(line);
      if (event.type === "turn.completed") result = "success";
      else if (event.type === "turn.failed") result = "error";
    } catch { /* a line cut by the output cap */ }
  }
  return { numTurns: null, result };
}
