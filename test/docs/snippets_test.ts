/**
 * Every runnable snippet of the README and docs/ (`_snippets.ts` says what runs and how), run as
 * written from the repository's folder against a real `functions/serve.ts` on 127.0.0.1:8080 with
 * the built-in scripted engine, local sandboxes and the installed agent CLIs: each one a step named
 * by its page, heading and line; a snippet that exits non-zero, prints the gateway's error envelope
 * unasked, or prints other than the output its page shows, fails.
 */
import assert from "node:assert/strict";
import { outputProblem, type Snippet, snippets } from "./_snippets.ts";

const ROOT = new URL("../../", import.meta.url).pathname.replace(/\/$/, "");
/** Every page, or those `DOCS_PAGES` names (comma-separated, from the root), to try a few. */
const PAGES = Deno.env.get("DOCS_PAGES")?.split(",") ?? [
  "README.md",
  ...[...Deno.readDirSync(`${ROOT}/docs`)]
    .filter((entry) => entry.name.endsWith(".md"))
    .map((entry) => `docs/${entry.name}`)
    .sort(),
];
const ADMIN_TOKEN = "docs-admin-token-0123456789";
/** Longest one snippet may run. */
const SNIPPET_MS = 240_000;

/** A gateway process as `deno task serve` runs it, on the port the pages name. */
async function serveGateway(scratch: string): Promise<{ stop: () => Promise<string> }> {
  const child = new Deno.Command(Deno.execPath(), {
    args: ["run", "-A", `${ROOT}/functions/serve.ts`],
    cwd: ROOT,
    env: {
      NO_COLOR: "1",
      PORT: "8080",
      HOST: "127.0.0.1",
      WORKERS: "1",
      ADMIN_TOKEN,
      KV_PATH: `${scratch}/gateway.kv`,
      SANDBOX_ROOT: `${scratch}/sandboxes`,
    },
    stdout: "piped",
    stderr: "piped",
  }).spawn();
  let output = "";
  const decoder = new TextDecoder();
  const pump = async (stream: ReadableStream<Uint8Array>) => {
    for await (const chunk of stream) output += decoder.decode(chunk, { stream: true });
  };
  const pumped = Promise.all([pump(child.stdout), pump(child.stderr)]);
  const started = Date.now();
  while (!/Rollout Gateway listening on/.test(output)) {
    if (Date.now() - started > 60_000) throw new Error(`The gateway did not start:\n${output}`);
    const exited = await Promise.race([child.status, new Promise((r) => setTimeout(r, 50, null))]);
    if (exited) throw new Error(`The gateway exited before it listened:\n${output}`);
  }
  return {
    stop: async () => {
      child.kill("SIGTERM");
      await child.status;
      await pumped;
      return output;
    },
  };
}

/** Runs `snippet` as its page says, and answers its status, stdout and stderr. */
async function run(
  snippet: Snippet,
  env: Record<string, string>,
): Promise<{ code: number; out: string; err: string }> {
  const [command, args] = snippet.lang === "python"
    ? ["python3", ["-c", snippet.body]]
    : ["bash", ["-e", "-o", "pipefail", "-c", snippet.body]];
  const child = new Deno.Command(command, {
    args,
    cwd: ROOT,
    env,
    stdin: "null",
    stdout: "piped",
    stderr: "piped",
    signal: AbortSignal.timeout(SNIPPET_MS),
  }).spawn();
  const output = await child.output();
  const decoder = new TextDecoder();
  return {
    code: output.code,
    out: decoder.decode(output.stdout),
    err: decoder.decode(output.stderr),
  };
}

Deno.test("every runnable snippet of the README and docs/ runs as written", async (t) => {
  const scratch = await Deno.makeTempDir({ prefix: "rg-docs-" });
  // `deno` as the pages write it: this one (the README runs it through npx).
  await Deno.mkdir(`${scratch}/bin`);
  await Deno.symlink(Deno.execPath(), `${scratch}/bin/deno`);
  const gateway = await serveGateway(scratch);
  const env = {
    ...Deno.env.toObject(),
    PATH: `${scratch}/bin:${Deno.env.get("PATH") ?? "/usr/bin:/bin"}`,
    HOME: scratch,
    ADMIN_TOKEN,
    NO_COLOR: "1",
  };
  let ran = 0;
  try {
    for (const page of PAGES) {
      for (const snippet of snippets(page, await Deno.readTextFile(`${ROOT}/${page}`))) {
        const name = `${snippet.file} › ${snippet.heading} (line ${snippet.line})`;
        if (snippet.skip !== null) {
          await t.step({ name: `${name}: not run, ${snippet.skip}`, ignore: true, fn: () => {} });
          continue;
        }
        ran++;
        await t.step(name, async () => {
          const { code, out, err } = await run(snippet, env);
          assert.equal(code, 0, `exited ${code}:\n${out}\n${err}`);
          if (!snippet.expectError) {
            const both = `${out}\n${err}`;
            assert.doesNotMatch(both, /"type":\s*"error"/, `printed an error:\n${both}`);
          }
          if (snippet.output) {
            const problem = outputProblem(out, snippet.output);
            assert.equal(problem, null, `${problem}\n--- its output:\n${out.slice(0, 6000)}`);
          }
        });
      }
    }
    assert.ok(ran > 0);
  } finally {
    const log = await gateway.stop();
    if (Deno.env.get("DOCS_GATEWAY_LOG")) console.log(log);
    await Deno.remove(scratch, { recursive: true });
  }
});
