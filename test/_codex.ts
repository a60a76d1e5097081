/**
 * Runs the real OpenAI Codex CLI (`@openai/codex`, pinned in tools/codex) headless against a
 * gateway: `codex exec --json` in a work tree, with a scratch CODEX_HOME holding the rollout
 * harness's config.toml (`codexConfig`: the gateway as its model provider over the Responses API,
 * the session token read from an env variable, everything that would reach another host off, no
 * sandbox of its own), one attempt per request, and proxies pointed at a closed port so an attempt
 * to reach anything but the gateway fails instead of leaving the machine.
 *
 * @module
 */

import { CODEX_KEY_ENV, codexConfig, findCodex } from "../lib/agents/mod.ts";

/** The CLI's native binary in tools/codex (the platform package npm installed). */
export async function codexBinary(): Promise<string> {
  const found = await findCodex(null);
  if (found === null) throw new Error("Codex CLI not found: run tools/setup.ts --tests");
  return found;
}

/** What a run left: exit code, the JSONL events of `--json`, stderr. */
export interface CodexRun {
  readonly code: number;
  readonly events: Record<string, unknown>[];
  readonly stderr: string;
  /** The text of the last `agent_message` item. */
  readonly lastMessage: string | null;
}

/** One headless run in `cwd`; `baseUrl` is the OpenAI base URL (ending in `/v1`). */
export async function runCodex(options: {
  baseUrl: string;
  apiKey: string;
  cwd: string;
  prompt: string;
  model?: string;
  contextWindow?: number;
  /** Codex's sub-agent tools on (`[agents] enabled`). */
  agents?: boolean;
}): Promise<CodexRun> {
  const home = await Deno.makeTempDir({ prefix: "codex-home-" });
  try {
    await Deno.writeTextFile(
      `${home}/config.toml`,
      codexConfig({
        baseUrl: options.baseUrl,
        model: options.model ?? "qwen3-test",
        contextWindow: options.contextWindow ?? 40_960,
        // The tests want the gateway's first answer.
        maxRetries: 0,
        agents: options.agents,
      }),
    );
    const output = await new Deno.Command(await codexBinary(), {
      args: [
        "exec",
        "--json",
        "--dangerously-bypass-approvals-and-sandbox",
        "--strict-config",
        // After `--` the prompt is the prompt, even one that starts with `-` or names a command.
        "--",
        options.prompt,
      ],
      cwd: options.cwd,
      clearEnv: true,
      env: {
        PATH: Deno.env.get("PATH") ?? "/usr/bin:/bin",
        HOME: home,
        CODEX_HOME: home,
        [CODEX_KEY_ENV]: options.apiKey,
        HTTP_PROXY: "http://127.0.0.1:9",
        HTTPS_PROXY: "http://127.0.0.1:9",
        NO_PROXY: "127.0.0.1,localhost",
      },
      // Codex reads stdin when it is not a terminal; an empty one ends at once.
      stdin: "null",
      stdout: "piped",
      stderr: "piped",
    }).output();
    const events = new TextDecoder().decode(output.stdout).split("\n").flatMap((line) => {
      try {
        return line.startsWith("{") ? [JSON.parse(line)] : [];
      } catch {
        return [];
      }
    });
    const messages = events.flatMap((event) => {
      const item = event.item as { type?: string; text?: string } | undefined;
      return event.type === "item.completed" && item?.type === "agent_message"
        ? [item.text ?? ""]
        : [];
    });
    return {
      code: output.code,
      events,
      stderr: new TextDecoder().decode(output.stderr),
      lastMessage: messages.at(-1) ?? null,
    };
  } finally {
    await Deno.remove(home, { recursive: true });
  }
}
