import assert from "node:assert/strict";
import { EnvClient, EnvError, MAX_ENV_ANSWER_BYTES } from "../../lib/rollout/mod.ts";

/** An answer that never comes: the call hangs until its client leaves. */
const never = (request: Request) =>
  new Promise<Response>((resolve) =>
    request.signal.addEventListener("abort", () => resolve(new Response(null)))
  );

/** An environment that answers every call with `answer`. */
async function withEnv(
  answer: (request: Request) => Response | Promise<Response>,
  test: (env: EnvClient, seen: unknown[]) => Promise<void>,
): Promise<void> {
  const seen: unknown[] = [];
  const server = Deno.serve({ hostname: "127.0.0.1", port: 0, onListen() {} }, async (request) => {
    seen.push({ path: new URL(request.url).pathname, body: await request.clone().json() });
    return answer(request);
  });
  try {
    await test(
      new EnvClient(`http://127.0.0.1:${server.addr.port}`, { episodeId: "ep1", timeoutMs: 500 }),
      seen,
    );
  } finally {
    await server.shutdown();
  }
}

Deno.test("EnvClient sends the episode with every call and reads the protocol's answers", async () => {
  await withEnv(
    (request) =>
      new URL(request.url).pathname === "/reset"
        ? Response.json({ observation: "Hi", wiki: "Policy", tools: [{ type: "function" }] })
        : Response.json({ observation: "ok", reward: 0.5, done: true, info: { a: 1 } }),
    async (env, seen) => {
      assert.deepEqual(await env.reset(3, { base_url: "u", api_key: "k", model: "m" }), {
        observation: "Hi",
        info: {},
        wiki: "Policy",
        tools: [{ type: "function" }],
      });
      assert.deepEqual(await env.step({ name: "respond", kwargs: { content: "x" } }), {
        observation: "ok",
        reward: 0.5,
        done: true,
        info: { a: 1 },
      });
      assert.deepEqual(seen, [
        {
          path: "/reset",
          body: {
            task_index: 3,
            episode_id: "ep1",
            user_model: { base_url: "u", api_key: "k", model: "m" },
          },
        },
        {
          path: "/step",
          body: { episode_id: "ep1", action: { name: "respond", kwargs: { content: "x" } } },
        },
      ]);
    },
  );
});

Deno.test("EnvClient refuses what is not the protocol with an EnvError naming it", async () => {
  const cases: [(request: Request) => Response | Promise<Response>, RegExp][] = [
    [
      () => new Response("oops", { status: 500 }),
      /^The environment's \/step answered HTTP 500: oops$/,
    ],
    [() => new Response("<html>"), /answer is not JSON: <html>$/],
    [() => Response.json({ observation: 1, done: true }), /answer: observation: Invalid input/],
    [() => Response.json({ observation: "x" }), /answer: done: Invalid input/],
    [
      () => Response.json({ observation: "x", done: false, reward: "1" }),
      /answer: reward: Invalid input/,
    ],
    [
      () => new Response("x".repeat(MAX_ENV_ANSWER_BYTES + 1)),
      /answered more than 8388608 bytes$/,
    ],
    [never, /^The environment's \/step failed: no answer within 500 ms$/],
  ];
  for (const [answer, message] of cases) {
    await withEnv(answer, async (env) => {
      await assert.rejects(env.step({ name: "a", kwargs: {} }), (error: Error) => {
        assert.ok(error instanceof EnvError, String(error));
        assert.match(error.message, message);
        return true;
      });
    });
  }
});

Deno.test("EnvClient: the caller's abort ends a call as an abort, not an EnvError", async () => {
  await withEnv(never, async (env) => {
    const controller = new AbortController();
    const call = env.step({ name: "a", kwargs: {} }, controller.signal);
    controller.abort(new Error("stopped"));
    await assert.rejects(call, /stopped/);
  });
});
