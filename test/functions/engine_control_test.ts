/**
 * The trainer's engine controls through HTTP: a turn a pause interrupts (in each of SGLang's
 * modes) while the weights change completes for the agent, its stream whole, and is recorded
 * as one exact chain whose tokens carry the two weight versions that sampled them; exports
 * mask or drop what `max_staleness` calls stale; the calls fan out to every engine worker.
 */
import assert from "node:assert/strict";
import { type PauseMode, scriptedLogprob } from "../../lib/scripted_engine/mod.ts";
import {
  ADMIN_HEADERS,
  engineEnv,
  onEngine,
  qwen3,
  type SampleJson,
  startGateway,
  type TestGateway,
} from "../_gateway.ts";
import { until } from "../engine/_client.ts";

const TEXT = "The weights changed while this reply was being written, and it went on regardless. " +
  "Every token keeps the version that sampled it.";

/** POSTs a trainer call (admin token) and returns its status and JSON body. */
async function admin(gw: TestGateway, path: string, body?: unknown, method = "POST") {
  const response = await gw.fetch(path, {
    method,
    headers: ADMIN_HEADERS,
    ...(body === undefined ? {} : { body: JSON.stringify(body) }),
  });
  return { status: response.status, body: await response.json() };
}

async function exportWith(gw: TestGateway, id: string, query: string) {
  const response = await gw.fetch(`/sessions/${id}/samples?${query}`, {
    headers: ADMIN_HEADERS,
  });
  // deno-lint-ignore no-explicit-any
  return { status: response.status, body: await response.json() as any };
}

/** Each dialect's pause modes that hold or end a running call (vLLM's `wait` lets it finish). */
const PAUSES: [string, PauseMode][] = [
  ["sglang", "abort"],
  ["sglang", "retract"],
  ["sglang", "in_place"],
  ["vllm", "abort"],
  ["vllm", "keep"],
  ["vllm_completions", "abort"],
  ["vllm_completions", "keep"],
];

for (const [api, mode] of PAUSES) {
  Deno.test(
    onEngine(
      `a streamed turn paused (${mode}) across a weight update completes as one exact chain with two versions`,
      api,
    ),
    async () => {
      const tok = await qwen3();
      const full = [...tok.encode(TEXT), tok.eosId];
      // A resumed call continues the reply: it is scripted as what its prompt has not yet got.
      let firstPrompt = 0;
      const gw = await startGateway({
        latencyMs: 8,
        script: (call) => {
          if (firstPrompt === 0) firstPrompt = call.inputIds.length;
          return { tokens: full.slice(call.inputIds.length - firstPrompt), eos: false };
        },
        env: engineEnv(api),
      });
      try {
        const { id, token } = await gw.openSession();
        const client = gw.anthropic(token);
        const stream = client.messages.stream({
          model: "qwen3",
          max_tokens: 500,
          messages: [{ role: "user", content: "Write while the weights change." }],
        });
        let streamed = "";
        stream.on("text", (delta) => void (streamed += delta));
        await until(() => streamed.length > 10);

        const paused = await admin(gw, "/engine/pause", { mode });
        assert.equal(paused.status, 200, JSON.stringify(paused.body));
        assert.deepEqual(paused.body.workers.map((w: { url: string }) => w.url), [gw.engine.url]);
        // Held (retract, in place) or ended (abort): nothing more is sampled until continue.
        const cut = gw.engine.calls[0].produced!;
        const updated = await admin(gw, "/engine/weight_version", { version: "2" });
        assert.equal(updated.status, 200, JSON.stringify(updated.body));
        assert.deepEqual((await admin(gw, "/engine/weight_version", undefined, "GET")).body, {
          workers: [{ url: gw.engine.url, version: "2" }],
        });
        assert.equal((await admin(gw, "/engine/continue")).status, 200);

        const message = await stream.finalMessage();
        assert.deepEqual(message.content, [{ type: "text", text: TEXT }]);
        assert.equal(streamed, TEXT, "the agent's stream went on past the pause");
        assert.deepEqual(gw.engine.pauses, [mode]);

        const calls = gw.engine.calls;
        assert.equal(calls.length, mode === "abort" ? 2 : 1, "an abort costs one more engine call");
        const outputs = calls.map((call) => call.output!);
        assert.deepEqual(outputs.flat(), full, "the outputs add up to the reply");
        const [sample] = await gw.samples(id) as SampleJson[];
        assert.deepEqual(sample.prompt_ids, calls[0].inputIds);
        assert.deepEqual(sample.response_ids, full, "one chain: the prompt, then every token once");
        assert.deepEqual(sample.loss_mask, full.map(() => 1));
        assert.deepEqual(
          sample.logprobs,
          outputs.flatMap((output) => output.map((token, i) => scriptedLogprob(token, i))),
        );
        if (mode === "abort") {
          assert.deepEqual(calls[1].inputIds, [...calls[0].inputIds, ...outputs[0]]);
          assert.deepEqual(sample.turns[0].flags, ["engine_aborted"]);
        } else {
          assert.deepEqual(sample.turns[0].flags, []);
        }
        // Tokens sampled before the update are "default"'s, the rest version 2's.
        const before = cut;
        if (mode === "abort") assert.equal(outputs[0].length, cut);
        assert.ok(before > 0 && before < full.length, `cut at ${before}`);
        assert.deepEqual(sample.version_spans, [
          { version: "default", start: 0, end: before },
          { version: "2", start: before, end: full.length },
        ]);
        assert.deepEqual(sample.turns[0].weight_versions, ["default", "2"]);

        // max_staleness 1 at version 2: "default" (0) is two behind, so its tokens are stale.
        const masked = await exportWith(gw, id, "max_staleness=1");
        assert.equal(masked.status, 200, JSON.stringify(masked.body));
        assert.deepEqual(masked.body.samples[0].loss_mask, full.map((_, i) => i < before ? 0 : 1));
        assert.equal(masked.body.samples[0].stale_tokens, before);
        const fresh = await exportWith(gw, id, "max_staleness=2");
        assert.deepEqual(fresh.body.samples[0].loss_mask, full.map(() => 1));
        const dropped = await exportWith(gw, id, "max_staleness=0&current_version=2&stale=drop");
        assert.deepEqual(dropped.body.samples, []);
        assert.deepEqual(dropped.body.dropped, [{
          chain_id: sample.chain_id,
          kind: "final",
          reason: `${before} tokens sampled by weight versions older than 2`,
        }]);
        const slime = await exportWith(gw, id, "format=slime&max_staleness=1");
        assert.deepEqual(slime.body.samples[0].weight_versions, ["default", "2"]);
        assert.deepEqual(slime.body.samples[0].metadata.version_spans, sample.version_spans);
        assert.deepEqual(slime.body.samples[0].loss_mask, masked.body.samples[0].loss_mask);
      } finally {
        await gw.close();
      }
    },
  );
}

Deno.test("engine controls want the admin token and a good body; a worker down is a 503 naming it", async () => {
  const down = "http://127.0.0.1:9"; // discard port: nothing listens
  const gw = await startGateway({ env: { ENGINE_WORKERS: `${down}` } });
  try {
    const { token } = await gw.openSession();
    for (
      const [headers, status] of [[{}, 401], [{ authorization: `Bearer ${token}` }, 403]] as const
    ) {
      const response = await gw.fetch("/engine/pause", { method: "POST", headers });
      assert.equal(response.status, status);
      await response.body?.cancel();
    }
    const mode = await admin(gw, "/engine/pause", { mode: "later" });
    assert.equal(mode.status, 400);
    assert.equal(mode.body.error.type, "invalid_request_error");
    assert.match(mode.body.error.message, /^mode: /);
    const version = await admin(gw, "/engine/weight_version", { version: "x y" });
    assert.equal(version.status, 400);
    assert.match(version.body.error.message, /^version: /);
    const failed = await admin(gw, "/engine/continue");
    assert.equal(failed.status, 503);
    assert.equal(failed.body.type, "error");
    assert.equal(failed.body.error.type, "unavailable_error");
    assert.match(
      failed.body.error.message,
      /^1 engine worker\(s\) failed: http:\/\/127\.0\.0\.1:9: /,
    );
    assert.equal(
      gw.engine.paused(),
      null,
      "the gateway's engine is not among the configured workers",
    );
  } finally {
    await gw.close();
  }
});

Deno.test("max_staleness wants integer weight versions, and says which one is not", async () => {
  const gw = await startGateway({ script: ["hello"] });
  try {
    gw.engine.setWeightVersion("v2");
    const { id, token } = await gw.openSession();
    const client = gw.anthropic(token);
    await client.messages.create({
      model: "m",
      max_tokens: 50,
      messages: [{ role: "user", content: "hi" }],
    });
    const refused = await exportWith(gw, id, "max_staleness=1&current_version=3");
    assert.equal(refused.status, 400);
    assert.match(refused.body.error.message, /^Weight version "v2" is not an integer/);
    const unknown = await exportWith(gw, id, "max_staleness=1");
    assert.equal(unknown.status, 400, "the engine's own version is not an integer either");
    const bad = await exportWith(gw, id, "max_staleness=-1");
    assert.equal(bad.status, 400);
    assert.match(bad.body.error.message, /^max_staleness: /);
    const plain = await exportWith(gw, id, "");
    assert.deepEqual(plain.body.samples[0].version_spans, [{ version: "v2", start: 0, end: 2 }]);
    assert.equal(plain.body.samples[0].stale_tokens, 0);
  } finally {
    await gw.close();
  }
});
