/**
 * Gateway processes for process-level tests: `functions/serve.ts` run as a child process (its
 * own PID, its own handle on the KV file), and the few HTTP calls the tests make to it.
 *
 * @module
 */
import assert from "node:assert/strict";
import { ADMIN_TOKEN, type SampleJson } from "../_gateway.ts";

export { ADMIN_TOKEN };

const ROOT = new URL("../../", import.meta.url).pathname;
const LISTENING = /Rollout Gateway listening on (http:\/\/\S+)/;
/** Longest a gateway may take to print its banner (it loads the tokenizer first). */
const START_DEADLINE_MS = 60_000;
/** Longest a graceful stop may take before the process is killed. */
const STOP_DEADLINE_MS = 10_000;

/** A running gateway child process. */
export interface GatewayProcess {
  readonly url: string;
  readonly pid: number;
  /** What the process printed so far, stdout then stderr. */
  output(): string;
  /** Sends `signal` and waits for the process to exit. */
  kill(signal: Deno.Signal): Promise<Deno.CommandStatus>;
  /** Stops the process (SIGTERM, then SIGKILL after a deadline) and closes its pipes. */
  close(): Promise<void>;
}

/**
 * Starts `deno run -A functions/serve.ts` on 127.0.0.1 with a free port and `env`, in the
 * repository's folder or in `cwd` (a host's working folder of its own); with `alone`, one
 * function file served by itself instead (`deno serve -A functions/<alone>.ts`).
 */
export async function spawnGateway(
  env: Record<string, string>,
  cwd = ROOT,
  alone?: string,
): Promise<GatewayProcess> {
  const config = ["--config", `${ROOT}deno.json`];
  const args = alone === undefined ? ["run", "-A", ...config, `${ROOT}functions/serve.ts`] : [
    "serve",
    "-A",
    ...config,
    "--host",
    "127.0.0.1",
    "--port",
    String(freePort()),
    `${ROOT}functions/${alone}.ts`,
  ];
  const child = new Deno.Command(Deno.execPath(), {
    args,
    cwd,
    env: { NO_COLOR: "1", HOST: "127.0.0.1", PORT: "0", WORKERS: "1", ADMIN_TOKEN, ...env },
    stdin: "null",
    stdout: "piped",
    stderr: "piped",
  }).spawn();
  let stdout = "";
  let stderr = "";
  const listening = Promise.withResolvers<string>();
  const drained = Promise.all([
    drain(child.stdout, (text) => {
      stdout += text;
      const match = stdout.match(LISTENING);
      if (match) listening.resolve(match[1]);
    }),
    drain(child.stderr, (text) => void (stderr += text)),
  ]);
  let exited = false;
  const status = child.status.then((status) => {
    exited = true;
    listening.reject(new Error(`Gateway exited (${status.code}) before listening:\n${stderr}`));
    return status;
  });
  const timer = setTimeout(
    () => listening.reject(new Error(`Gateway did not listen within ${START_DEADLINE_MS} ms`)),
    START_DEADLINE_MS,
  );
  const kill = async (signal: Deno.Signal) => {
    if (!exited) child.kill(signal);
    const result = await status;
    await drained;
    return result;
  };
  const close = async () => {
    if (!exited) child.kill("SIGTERM");
    const deadline = setTimeout(() => exited || child.kill("SIGKILL"), STOP_DEADLINE_MS);
    await status;
    clearTimeout(deadline);
    await drained;
  };
  try {
    const url = await listening.promise;
    return { url, pid: child.pid, output: () => stdout + stderr, kill, close };
  } catch (error) {
    await kill("SIGKILL");
    throw error;
  } finally {
    clearTimeout(timer);
  }
}

/** A port nothing listens on now. */
function freePort(): number {
  const listener = Deno.listen({ hostname: "127.0.0.1", port: 0 });
  const port = (listener.addr as Deno.NetAddr).port;
  listener.close();
  return port;
}

/** The pids serving requests: the workers a supervisor's banner names, else the process itself. */
export function servingPids(gateway: GatewayProcess): number[] {
  const listed = gateway.output().match(/with \d+ workers \(pids ([\d, ]+);/);
  return listed ? [...listed[1].matchAll(/\d+/g)].map((match) => Number(match[0])) : [gateway.pid];
}

async function drain(stream: ReadableStream<Uint8Array>, onText: (text: string) => void) {
  for await (const text of stream.pipeThrough(new TextDecoderStream())) onText(text);
}

const admin = { authorization: `Bearer ${ADMIN_TOKEN}`, "content-type": "application/json" };

/** Opens a session through a gateway's trainer API. */
export async function openSession(url: string): Promise<{ id: string; token: string }> {
  const response = await fetch(`${url}/sessions`, { method: "POST", headers: admin, body: "{}" });
  assert.equal(response.status, 201, await response.clone().text());
  return await response.json();
}

/** A session's samples through a gateway's trainer API. */
export async function samples(url: string, id: string): Promise<SampleJson[]> {
  const response = await fetch(`${url}/sessions/${id}/samples`, { headers: admin });
  assert.equal(response.status, 200, await response.clone().text());
  return (await response.json()).samples;
}

export const TOOLS = [{ name: "Bash", input_schema: { type: "object" } }];

/** Model text that thinks, then calls Bash with `command`. */
export const bashCall = (command: string) =>
  `<think>\nRun ${command}.\n</think>\n\n<tool_call>\n{"name": "Bash", "arguments": {"command": "${command}"}}\n</tool_call>`;

/** Posts a non-streaming `/v1/messages` request offering {@linkcode TOOLS}. */
export function postMessages(
  url: string,
  token: string,
  messages: readonly unknown[],
): Promise<Response> {
  return fetch(`${url}/v1/messages`, {
    method: "POST",
    headers: { "x-api-key": token, "content-type": "application/json" },
    body: JSON.stringify({ model: "m", max_tokens: 256, tools: TOOLS, messages }),
  });
}

/** A reply as the agent reads it. */
export interface ReplyJson {
  content: { type: string; id?: string }[];
  stop_reason: string;
}

/** The conversation after `reply`: the reply echoed back, then its tool results (or a nudge). */
export function followUp(messages: readonly unknown[], reply: ReplyJson, turn: number): unknown[] {
  const uses = reply.content.filter((block) => block.type === "tool_use");
  return [
    ...messages,
    { role: "assistant", content: reply.content },
    {
      role: "user",
      content: uses.length > 0
        ? uses.map((use) => ({ type: "tool_result", tool_use_id: use.id, content: `out ${turn}` }))
        : "Go on.",
    },
  ];
}
