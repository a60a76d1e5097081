/**
 * The SGLang client's engine sessions against an engine of the test's own: one that reports no
 * prompt length cannot be checked, so the turn is sent again whole and sessions are not used on
 * it again; one without `/open_session` (404) is asked once.
 */
import assert from "node:assert/strict";
import { samplingParams, SglangClient } from "../../lib/engine/mod.ts";

/** An SGLang-shaped engine answering one token; `promptTokens` says whether it reports them. */
function fakeEngine(options: { promptTokens: boolean; sessions: boolean }) {
  const bodies: Record<string, unknown>[] = [];
  const paths: string[] = [];
  const server = Deno.serve({ hostname: "127.0.0.1", port: 0, onListen() {} }, async (request) => {
    const path = new URL(request.url).pathname;
    paths.push(path);
    const body = await request.json().catch(() => ({}));
    if (path === "/open_session") {
      return options.sessions
        ? Response.json(body.session_id)
        : Response.json({ detail: "Not Found" }, { status: 404 });
    }
    if (path === "/close_session" || path === "/abort_request") return new Response(null);
    bodies.push(body);
    const ids = body.input_ids as number[];
    return Response.json({
      output_ids: [5],
      meta_info: {
        id: body.rid,
        finish_reason: { type: "stop", matched: 5 },
        ...(options.promptTokens ? { prompt_tokens: ids.length } : {}),
        output_token_logprobs: [[-0.5, 5, null]],
        weight_version: "default",
      },
    });
  });
  return {
    url: `http://127.0.0.1:${server.addr.port}`,
    bodies,
    paths,
    close: () => server.shutdown(),
  };
}

const sampling = samplingParams({ maxTokens: 4 }, {
  promptLength: 3,
  contextLength: 4096,
  stopIds: [5],
});

Deno.test("an engine that reports no prompt length gets the turn again whole, and no sessions after", async () => {
  const engine = fakeEngine({ promptTokens: false, sessions: true });
  const client = new SglangClient(engine.url, {
    connections: 4,
    timeoutMs: 10_000,
    engineSessions: { idleS: 60, capacity: 4096 },
  });
  try {
    const first = await client.generate({ inputIds: [1, 2, 3], sampling, chain: { id: "s:c0" } });
    assert.equal(first.sessionResent, true);
    assert.deepEqual(first.outputIds, [5]);
    // In the session first (unchecked), then whole without one.
    assert.deepEqual(engine.bodies.map((b) => b.session_params ?? null), [
      { id: "rg-s:c0", rid: null },
      null,
    ]);
    const second = await client.generate({
      inputIds: [1, 2, 3, 5, 7],
      sampling,
      chain: { id: "s:c0", after: first.rid },
    });
    assert.equal(second.sessionResent, undefined);
    assert.equal(engine.bodies[2].session_params, undefined);
    assert.deepEqual(engine.bodies[2].input_ids, [1, 2, 3, 5, 7]);
    assert.equal(engine.paths.filter((p) => p === "/open_session").length, 1);
  } finally {
    await client.close();
    await engine.close();
  }
});

Deno.test("an engine without /open_session is asked once; its turns go whole", async () => {
  const engine = fakeEngine({ promptTokens: true, sessions: false });
  const client = new SglangClient(engine.url, {
    connections: 4,
    timeoutMs: 10_000,
    engineSessions: { idleS: 60, capacity: 4096 },
  });
  try {
    for (const chain of ["s:c0", "s:c1"]) {
      const generation = await client.generate({
        inputIds: [1, 2, 3],
        sampling,
        chain: { id: chain },
      });
      assert.equal(generation.sessionResent, undefined);
    }
    assert.deepEqual(engine.paths, ["/open_session", "/generate", "/generate"]);
    assert.ok(engine.bodies.every((body) => body.session_params === undefined));
  } finally {
    await client.close();
    await engine.close();
  }
});
