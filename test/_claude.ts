/**
 * Runs the real Claude Code CLI (pinned in tools/claude-code, installed by
 * `npm ci --prefix tools/claude-code`) headless against a gateway.
 *
 * @module
 */
import { findClaudeBinary } from "../lib/agents/mod.ts";

/** The CLI binary: `CLAUDE_BIN`, else the one tools/setup.ts installed (as the gateway finds it). */
export async function claudeBinary(): Promise<string> {
  const found = await findClaudeBinary(Deno.env.get("CLAUDE_BIN") ?? null);
  if (found === null) {
    throw new Error(
      "Claude Code CLI not found: run `npm ci --prefix tools/claude-code` (or set CLAUDE_BIN)",
    );
  }
  return found;
}

/** The npm tarball of the pinned CLI that `tools/setup.ts --tests` packs (native binary inside). */
export function claudeTarball(): Promise<string> {
  return pinnedTarball("claude-code", "@anthropic-ai/claude-code");
}

/** The npm tarball of `pkg` pinned in `tools/<folder>`, as `tools/setup.ts --tests` packs it. */
export async function pinnedTarball(folder: string, pkg: string): Promise<string> {
  const tools = new URL(`../tools/${folder}/`, import.meta.url).pathname;
  const pinned = JSON.parse(await Deno.readTextFile(`${tools}package.json`)).dependencies[pkg];
  const path = `${tools}${folder}-${pinned}.tgz`;
  await Deno.stat(path).catch(() => {
    throw new Error(`${pkg} tarball not found at "${path}": run tools/setup.ts --tests`);
  });
  return path;
}

/** One line of `--output-format stream-json`. */
export type StreamJsonEvent = Record<string, unknown> & { type: string; subtype?: string };

/** What a CLI run left behind. */
export interface ClaudeRun {
  readonly code: number;
  readonly events: StreamJsonEvent[];
  readonly stderr: string;
  /** The final `result` event. */
  readonly result: StreamJsonEvent | undefined;
}

/**
 * Runs `claude -p <prompt>` in `cwd` with a scratch HOME, pointed at `baseUrl` with `token`.
 *
 * @example
 * ```ts ignore
 * // Needs the pinned Claude Code CLI (tools/claude-code) and a test gateway `gw`.
 * const run = await runClaude({ baseUrl: gw.url, token, cwd: repo, prompt: "Fix the bug." });
 * assert.equal(run.code, 0);
 * ```
 */
export async function runClaude(options: {
  baseUrl: string;
  token: string;
  cwd: string;
  prompt: string;
  env?: Record<string, string>;
  args?: string[];
}): Promise<ClaudeRun> {
  // A caller-supplied HOME keeps the CLI's state across runs (`--continue`); ours is removed.
  const ownHome = options.env?.HOME === undefined;
  const home = options.env?.HOME ?? await Deno.makeTempDir({ prefix: "claude-home-" });
  try {
    const output = await new Deno.Command(await claudeBinary(), {
      args: [
        "-p",
        options.prompt,
        "--output-format",
        "stream-json",
        "--verbose",
        "--dangerously-skip-permissions",
        ...(options.args ?? []),
      ],
      cwd: options.cwd,
      clearEnv: true,
      env: {
        PATH: Deno.env.get("PATH") ?? "/usr/bin:/bin",
        HOME: home,
        IS_SANDBOX: "1", // --dangerously-skip-permissions refuses to start as root without it
        ANTHROPIC_BASE_URL: options.baseUrl,
        ANTHROPIC_AUTH_TOKEN: options.token,
        ANTHROPIC_MODEL: "qwen3-test",
        DISABLE_TELEMETRY: "1",
        DISABLE_AUTOUPDATER: "1",
        CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC: "1",
        ...options.env,
      },
      stdout: "piped",
      stderr: "piped",
    }).output();
    const events = new TextDecoder().decode(output.stdout).split("\n").flatMap((line) => {
      try {
        return line.startsWith("{") ? [JSON.parse(line) as StreamJsonEvent] : [];
      } catch {
        return [];
      }
    });
    return {
      code: output.code,
      events,
      stderr: new TextDecoder().decode(output.stderr),
      result: events.findLast((event) => event.type === "result"),
    };
  } finally {
    if (ownHome) await Deno.remove(home, { recursive: true });
  }
}

/** A fresh git repository in a temporary folder, with one empty commit. */
export async function tempRepo(): Promise<string> {
  const dir = await Deno.realPath(await Deno.makeTempDir({ prefix: "claude-repo-" }));
  const git = (...args: string[]) =>
    new Deno.Command("git", {
      args: ["-c", "user.email=test@example.com", "-c", "user.name=test", ...args],
      cwd: dir,
      stdout: "null",
      stderr: "null",
    }).output();
  await git("init", "-q", "-b", "main");
  await git("commit", "-q", "--allow-empty", "-m", "init");
  return dir;
}
