import assert from "node:assert/strict";
import {
  type ChatModel,
  type ChatReply,
  EnvClient,
  ModelError,
  runEnvLoop,
} from "../../lib/rollout/mod.ts";

/** A model that answers with `replies` in order, keeping the histories it was sent. */
function scriptedModel(replies: (ChatReply | ModelError)[]): ChatModel & { seen: unknown[][] } {
  const seen: unknown[][] = [];
  return {
    seen,
    complete(messages) {
      seen.push(structuredClone(messages as unknown[]));
      const reply = replies.shift()!;
      return reply instanceof ModelError ? Promise.reject(reply) : Promise.resolve(reply);
    },
  };
}

const calls = (...names: [string, string][]): ChatReply => ({
  message: {
    role: "assistant",
    content: null,
    tool_calls: names.map(([name, args], i) => ({
      id: `c${i}`,
      type: "function",
      function: { name, arguments: args },
    })),
  },
  content: "",
  toolCalls: names.map(([name, args], i) => ({ id: `c${i}`, function: { name, arguments: args } })),
});

/** A fake environment over HTTP: each step echoes its action; done at `doneAt` steps. */
async function withEnv(doneAt: number, test: (env: EnvClient, steps: unknown[]) => Promise<void>) {
  const steps: unknown[] = [];
  const server = Deno.serve({ hostname: "127.0.0.1", port: 0, onListen() {} }, async (request) => {
    const body = await request.json();
    if (new URL(request.url).pathname === "/reset") {
      return Response.json({ observation: "Help me", wiki: "Be kind", tools: [] });
    }
    steps.push(body.action);
    return Response.json({
      observation: `did ${body.action.name}`,
      reward: steps.length === doneAt ? 1 : 0,
      done: steps.length === doneAt,
    });
  });
  try {
    await test(
      new EnvClient(`http://127.0.0.1:${server.addr.port}`, { episodeId: "e", timeoutMs: 1000 }),
      steps,
    );
  } finally {
    await server.shutdown();
  }
}

const run = (env: EnvClient, model: ChatModel, maxSteps = 10) =>
  runEnvLoop({
    env,
    model,
    taskIndex: 0,
    maxSteps,
    systemPrompt: null,
    tools: null,
    userModel: null,
  });

Deno.test("runEnvLoop plays each tool call of a reply as a step, answers bad arguments itself, and echoes history as answered", async () => {
  await withEnv(2, async (env, steps) => {
    const two = calls(["lookup", '{"id":1}'], ["broken", "{not json"]);
    const model = scriptedModel([two, calls(["list", "[1]"]), calls(["finish", ""])]);
    const episode = await run(env, model);
    assert.deepEqual(
      [episode.status, episode.reward, episode.steps, episode.turns],
      ["COMPLETED", 1, 4, 3],
    );
    // Bad arguments never reached the environment.
    assert.deepEqual(
      steps,
      [
        { name: "lookup", kwargs: { id: 1 } },
        { name: "finish", kwargs: {} },
      ].slice(0, 1).concat([{ name: "finish", kwargs: {} }]),
    );
    assert.deepEqual(model.seen[1], [
      { role: "system", content: "Be kind" },
      { role: "user", content: "Help me" },
      two.message,
      { role: "tool", tool_call_id: "c0", content: "did lookup" },
      { role: "tool", tool_call_id: "c1", content: "Error: the arguments of broken are not JSON" },
    ]);
    assert.deepEqual(model.seen[2].at(-1), {
      role: "tool",
      tool_call_id: "c0",
      content: "Error: the arguments of list are not a JSON object",
    });
  });
});

Deno.test("runEnvLoop: text is the respond action; max_steps truncates even inside a reply; a model failure aborts", async () => {
  await withEnv(99, async (env, steps) => {
    const text: ChatReply = {
      message: { role: "assistant", content: "Hello" },
      content: "Hello",
      toolCalls: [],
    };
    const episode = await run(env, scriptedModel([text, calls(["a", "{}"], ["b", "{}"])]), 2);
    assert.deepEqual([episode.status, episode.steps, episode.turns], ["TRUNCATED", 2, 2]);
    assert.deepEqual(steps, [
      { name: "respond", kwargs: { content: "Hello" } },
      { name: "a", kwargs: {} },
    ]);
  });
  await withEnv(99, async (env) => {
    const episode = await run(env, scriptedModel([new ModelError(503, "engine down")]));
    assert.deepEqual(
      [episode.status, episode.steps, episode.turns, episode.detail],
      ["ABORTED", 0, 0, "Turn 1 failed (HTTP 503): engine down"],
    );
  });
});
