/**
 * The SSE path: Anthropic's event grammar on the wire, the same message as the JSON path, pings
 * while the engine works, and a client that leaves aborts the engine and records nothing.
 */
import Anthropic from "@anthropic-ai/sdk";
import assert from "node:assert/strict";
import { parseKey } from "../../lib/kv/mod.ts";
import { ENGINE_APIS, engineEnv, onEngine, startGateway } from "../_gateway.ts";
import { sseEvents } from "../_sse.ts";

const TOOL_REPLY =
  '<think>\nList first.\n</think>\n\nLet me look.\n<tool_call>\n{"name": "Bash", "arguments": {"command": "ls -la", "timeout": 30}}\n</tool_call>';
const BASH = {
  name: "Bash",
  input_schema: { type: "object" as const, properties: { command: { type: "string" } } },
};
const REQUEST = {
  model: "m",
  max_tokens: 256,
  tools: [BASH],
  messages: [{ role: "user" as const, content: "What is here?" }],
};

/** Replaces the ids that differ between two generations; drops the SDK's own `parsed_output`. */
function normalize(message: Anthropic.Message) {
  const { parsed_output: _, ...rest } = message as Anthropic.Message & { parsed_output?: unknown };
  return JSON.parse(
    JSON.stringify(rest)
      .replace(/msg_[0-9a-f]+/g, "msg_X")
      .replace(/toolu_[0-9a-f]+/g, "toolu_X"),
  );
}

Deno.test("a streamed turn follows Anthropic's event grammar, tool input only in input_json_delta", async () => {
  const gw = await startGateway({ script: [TOOL_REPLY], latencyMs: 8 });
  try {
    const { token } = await gw.openSession();
    const response = await gw.fetch("/v1/messages", {
      method: "POST",
      headers: { "x-api-key": token, "content-type": "application/json" },
      body: JSON.stringify({ ...REQUEST, stream: true }),
    });
    assert.equal(response.status, 200);
    assert.match(response.headers.get("content-type")!, /^text\/event-stream/);
    const events = sseEvents(await response.text());
    // Deltas arrive as the tokens are sampled: a run of them is one entry here.
    const names = events.map((e) => e.event).filter((name) => name !== "ping")
      .filter((name, i, all) => name !== "content_block_delta" || all[i - 1] !== name);
    assert.ok(events.some((e) => e.event === "ping"), "pings while the engine works");
    assert.deepEqual(names, [
      "message_start",
      "content_block_start",
      "content_block_delta",
      "content_block_stop",
      "content_block_start",
      "content_block_delta",
      "content_block_stop",
      "content_block_start",
      "content_block_delta",
      "content_block_stop",
      "message_delta",
      "message_stop",
    ]);
    const start = events[0].data.message as Anthropic.Message;
    assert.deepEqual(start.content, []);
    assert.equal(start.stop_reason, null);
    assert.ok(start.usage.input_tokens > 0);
    const blocks = events.filter((e) => e.event === "content_block_start").map((e) => e.data);
    assert.deepEqual(blocks.map((b) => b.index), [0, 1, 2]);
    assert.deepEqual((blocks[2].content_block as { input: unknown }).input, {});
    const toolDeltas = events.filter((e) => e.event === "content_block_delta" && e.data.index === 2)
      .map((e) => e.data.delta as { type: string; partial_json: string });
    assert.ok(toolDeltas.every((d) => d.type === "input_json_delta"));
    assert.deepEqual(JSON.parse(toolDeltas.map((d) => d.partial_json).join("")), {
      command: "ls -la",
      timeout: 30,
    });
    const thinkingDeltas = events.filter((e) =>
      e.event === "content_block_delta" && e.data.index === 0
    )
      .map((e) => (e.data.delta as { type: string }).type);
    assert.deepEqual(thinkingDeltas.at(-1), "signature_delta");
    assert.ok(thinkingDeltas.length > 2, "thinking streamed in pieces");
    assert.ok(thinkingDeltas.slice(0, -1).every((type) => type === "thinking_delta"));
    const delta = events.find((e) => e.event === "message_delta")!.data;
    assert.deepEqual(delta.delta, { stop_reason: "tool_use", stop_sequence: null });
    assert.equal(
      (delta.usage as { output_tokens: number }).output_tokens,
      gw.engine.calls[0].output!.length,
    );
  } finally {
    await gw.close();
  }
});

Deno.test("the SDK's stream helper yields the same message as the JSON path", async () => {
  const gw = await startGateway({ script: [TOOL_REPLY, TOOL_REPLY] });
  try {
    const a = await gw.openSession();
    const b = await gw.openSession();
    const client = (apiKey: string) => gw.anthropic(apiKey);
    const json = await client(a.token).messages.create(REQUEST);
    const stream = client(b.token).messages.stream(REQUEST);
    const inputDeltas: string[] = [];
    stream.on("streamEvent", (event) => {
      if (event.type === "content_block_delta" && event.delta.type === "input_json_delta") {
        inputDeltas.push(event.delta.partial_json);
      }
    });
    const streamed = await stream.finalMessage();
    const strip = (m: Anthropic.Message) => ({
      ...normalize(m),
      content: normalize(m).content.map((block: { signature?: string }) => ({
        ...block,
        signature: undefined,
      })),
    });
    assert.deepEqual(strip(streamed), strip(json));
    assert.deepEqual(json.content[2], {
      ...json.content[2],
      type: "tool_use",
      name: "Bash",
      input: { command: "ls -la", timeout: 30 },
    });
    assert.ok(inputDeltas.length > 0);
  } finally {
    await gw.close();
  }
});

/** Resolves once `check` holds, polling the event loop; fails after `ms`. */
async function eventually(check: () => boolean, ms = 5000): Promise<void> {
  const deadline = Date.now() + ms;
  while (!check()) {
    if (Date.now() > deadline) throw new Error("condition not reached");
    await new Promise((resolve) => setTimeout(resolve, 5));
  }
}

for (const api of ENGINE_APIS) {
  for (const stream of [true, false]) {
    Deno.test(
      onEngine(
        `a client that disconnects mid-turn aborts the engine request and records nothing (${
          stream ? "SSE" : "JSON"
        })`,
        api,
      ),
      async () => {
        const gw = await startGateway({
          script: ["word ".repeat(200)],
          latencyMs: 20,
          env: engineEnv(api),
        });
        try {
          const { id, token } = await gw.openSession();
          const controller = new AbortController();
          const response = fetch(`${gw.url}/v1/messages`, {
            method: "POST",
            headers: { "x-api-key": token, "content-type": "application/json" },
            body: JSON.stringify({ ...REQUEST, stream }),
            signal: controller.signal,
          });
          if (stream) {
            const reader = (await response).body!.getReader();
            await reader.read(); // message_start
            await eventually(() => gw.engine.calls.length === 1);
            await reader.cancel();
          } else {
            await eventually(() => gw.engine.calls.length === 1);
            controller.abort();
            await assert.rejects(response);
          }
          const rid = gw.engine.calls[0].rid;
          // `/v1/completions` (older vLLM) names its requests with ids of its own: there the
          // closed connection alone is the abort. vLLM sees it (`with_cancellation`); the
          // scripted engine (Deno.serve) does not see a client leave once it has read a body
          // this size, so there only a stream's end stops it here.
          const named = api !== "vllm_completions";
          if (named) await eventually(() => gw.engine.abortRequests.includes(rid));
          await eventually(() => gw.engine.calls[0].output !== undefined);
          if (named || stream) {
            assert.ok(gw.engine.calls[0].output!.length < 200, "the generation stopped early");
          }
          // The chain was registered when the request was routed; no turn of it was recorded.
          const turnFamilies = new Set(["turn", "turn_chunk", "replay", "lease", "chain_lease"]);
          const recorded: Deno.KvKey[] = [];
          for await (const entry of gw.kv.list({ prefix: [] })) {
            if (turnFamilies.has(parseKey(entry.key).kind)) recorded.push(entry.key);
          }
          assert.deepEqual(recorded, []);
          assert.deepEqual(await gw.samples(id), []);
        } finally {
          await gw.close();
        }
      },
    );
  }
}

Deno.test("an engine lost after the stream started ends it with an error event and records nothing", async () => {
  const gw = await startGateway({ script: ["word ".repeat(200)], latencyMs: 20 });
  try {
    const { id, token } = await gw.openSession();
    const response = await gw.fetch("/v1/messages", {
      method: "POST",
      headers: { "x-api-key": token, "content-type": "application/json" },
      body: JSON.stringify({ ...REQUEST, stream: true }),
    });
    assert.equal(response.status, 200);
    const reader = response.body!.pipeThrough(new TextDecoderStream()).getReader();
    let text = (await reader.read()).value ?? "";
    assert.match(text, /^event: message_start\n/);
    await eventually(() => gw.engine.calls.length === 1);
    await gw.engine.close(); // the engine goes away mid-generation and does not come back
    for (let chunk = await reader.read(); !chunk.done; chunk = await reader.read()) {
      text += chunk.value;
    }
    const events = sseEvents(text).map((e) => e.event).filter((name) => name !== "ping");
    // What was sampled before the engine went away was streamed; the message never ends.
    assert.equal(events[0], "message_start");
    assert.equal(events.at(-1), "error");
    assert.ok(events.includes("content_block_delta"), "content arrived before the failure");
    assert.ok(!events.includes("message_delta") && !events.includes("message_stop"));
    const error = sseEvents(text).at(-1)!.data.error as { type: string; message: string };
    assert.equal(error.type, "overloaded_error");
    assert.deepEqual(await gw.samples(id), []);
  } finally {
    await gw.close();
  }
});

Deno.test("a streamed request for no tokens is a stream of the empty message, as every protocol answers it", async () => {
  const gw = await startGateway({ script: [TOOL_REPLY] });
  try {
    const { token } = await gw.openSession();
    const response = await gw.fetch("/v1/messages", {
      method: "POST",
      headers: { "x-api-key": token, "content-type": "application/json" },
      body: JSON.stringify({ ...REQUEST, max_tokens: 0, stream: true }),
    });
    assert.equal(response.status, 200);
    assert.match(response.headers.get("content-type")!, /^text\/event-stream/);
    const events = sseEvents(await response.text()).filter((e) => e.event !== "ping");
    assert.deepEqual(events.map((e) => e.event), [
      "message_start",
      "message_delta",
      "message_stop",
    ]);
    assert.deepEqual(events[1].data.delta, { stop_reason: "max_tokens", stop_sequence: null });
    assert.equal(gw.engine.calls.length, 0);
  } finally {
    await gw.close();
  }
});
