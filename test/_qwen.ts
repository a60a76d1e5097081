/**
 * Runs the real Qwen Code CLI (`@qwen-code/qwen-code`, pinned in tools/qwen-code) headless
 * against a gateway: one-shot prompt, `--yolo` (tools run without asking), OpenAI auth from the
 * environment, JSON output, a scratch HOME, and proxies pointed at a closed port so an attempt to
 * reach anything but the gateway fails instead of leaving the machine.
 *
 * @module
 */

/** The CLI's entry point in tools/qwen-code. */
export const QWEN_ENTRY = new URL(
  "../tools/qwen-code/node_modules/@qwen-code/qwen-code/cli-entry.js",
  import.meta.url,
).pathname;

/** What a run left: exit code, the JSON events of `-o json`, stderr. */
export interface QwenRun {
  readonly code: number;
  readonly events: Record<string, unknown>[];
  readonly stderr: string;
  /** The final `result` event. */
  readonly result: Record<string, unknown> | undefined;
}

/** One headless run in `cwd`; `baseUrl` is the OpenAI base URL (ending in `/v1`). */
export async function runQwen(options: {
  baseUrl: string;
  apiKey: string;
  cwd: string;
  prompt: string;
}): Promise<QwenRun> {
  const home = await Deno.makeTempDir({ prefix: "qwen-home-" });
  try {
    const output = await new Deno.Command("node", {
      args: [QWEN_ENTRY, "--yolo", "--auth-type", "openai", "-o", "json", options.prompt],
      cwd: options.cwd,
      clearEnv: true,
      env: {
        PATH: Deno.env.get("PATH") ?? "/usr/bin:/bin",
        HOME: home,
        OPENAI_BASE_URL: options.baseUrl,
        OPENAI_API_KEY: options.apiKey,
        OPENAI_MODEL: "qwen3-test",
        QWEN_CODE_SUPPRESS_YOLO_WARNING: "1",
        // Otherwise each run reports usage statistics to an Alibaba host.
        QWEN_USAGE_STATISTICS_ENABLED: "false",
        HTTP_PROXY: "http://127.0.0.1:9",
        HTTPS_PROXY: "http://127.0.0.1:9",
        NO_PROXY: "127.0.0.1,localhost",
      },
      stdout: "piped",
      stderr: "piped",
    }).output();
    const stdout = new TextDecoder().decode(output.stdout);
    let events: Record<string, unknown>[] = [];
    try {
      events = JSON.parse(stdout.slice(stdout.indexOf("[")));
    } catch {
      events = [];
    }
    return {
      code: output.code,
      events,
      stderr: new TextDecoder().decode(output.stderr),
      result: events.findLast((event) => event.type === "result"),
    };
  } finally {
    await Deno.remove(home, { recursive: true });
  }
}
