/**
 * Routed experts recorded exactly (R3), over HTTP: a Claude-Code-sized episode with a sub-agent
 * and a compaction on a MoE model, on SGLang (the start length: each turn's new rows only) and on
 * vLLM (every row each turn, in its `.npy` form and its older split form): every exported
 * sample's routes equal, row for row, what the engine reported for those positions, and pass
 * slime's checks; a worker killed mid-episode gives the first recorded rows and the flag.
 */
import assert from "node:assert/strict";
import { expertDtype, rowWidth } from "../../lib/engine/mod.ts";
import { listChains, readLiveTurns } from "../../lib/session/mod.ts";
import { engineEnv, type SampleJson, startGateway } from "../_gateway.ts";
import {
  assertSlimeRoutes,
  expectedRows,
  exported,
  fetchRoutes,
  moeEpisode,
  TEST_MOE,
} from "../_moe_episode.ts";

const FORMS = [
  { api: "sglang", form: "npy" },
  { api: "vllm", form: "npy" },
  { api: "vllm", form: "split" },
  { api: "vllm_completions", form: "npy" },
] as const;

interface ExportedRoutes {
  url: string;
  shape: [number, number, number];
  dtype: string;
  layout: string;
  missing_rows: number;
  mismatched_turns: number;
}

for (const { api, form } of FORMS) {
  Deno.test(`a MoE episode's exported routes are the engine's rows, on ${api} (${form})`, async () => {
    const gw = await startGateway({ moe: TEST_MOE, env: engineEnv(api), vllmRoutes: form });
    try {
      const { id, token } = await gw.openSession();
      await moeEpisode(gw, token);
      const samples = await exported(gw, id) as unknown as (SampleJson & {
        routed_experts: ExportedRoutes;
      })[];
      assert.deepEqual(samples.map((s) => s.kind), ["wipe", "subagent", "final"]);
      const width = rowWidth(TEST_MOE);
      for (const sample of samples) {
        const tokens = sample.prompt_ids.length + sample.response_ids.length;
        const routes = sample.routed_experts;
        assert.deepEqual(routes.shape, [tokens - 1, TEST_MOE.layers, TEST_MOE.topK]);
        assert.equal(routes.dtype, "int16");
        assert.equal(routes.mismatched_turns, 0);
        const npy = await fetchRoutes(gw, routes.url);
        assert.deepEqual(npy.shape, routes.shape);
        assert.deepEqual(
          npy.values,
          expectedRows(gw.engine.calls, sample, tokens - 1, TEST_MOE),
          `${sample.chain_id}: the engine's rows`,
        );
        assertSlimeRoutes(npy.values, npy.shape, tokens, TEST_MOE, routes.missing_rows);
        // verl's layout: a row a token, the last never forwarded.
        const verl = await fetchRoutes(gw, `${routes.url}?layout=verl`);
        assert.deepEqual(verl.shape, [tokens, TEST_MOE.layers, TEST_MOE.topK]);
        assert.deepEqual(verl.values.slice(0, npy.values.length), npy.values);
        assert.deepEqual(verl.values.slice(npy.values.length), new Array(width).fill(-1));
      }
      // Stored: each turn's own rows, once, a byte an id.
      let stored = 0;
      for (const chain of await listChains(gw.kv, id)) {
        for (const turn of await readLiveTurns(gw.kv, chain)) {
          assert.ok(turn.routes, `turn ${turn.index} of ${chain.id} has its routes`);
          assert.equal(turn.routes.dtype, expertDtype(TEST_MOE));
          assert.equal(turn.routes.start + turn.routes.rows, turn.inputLen + turn.outputLen - 1);
          stored += turn.routes.rows;
        }
      }
      const forwarded = samples.reduce(
        (n, s) =>
          n + s.prompt_ids.length + s.response_ids.length - 1 - s.routed_experts.missing_rows,
        0,
      );
      assert.equal(stored, forwarded, "every forwarded position stored once");
      // The other formats name the same file.
      const slime = await exported(gw, id, "slime");
      assert.deepEqual(
        slime.map((s) => (s.rollout_routed_experts as ExportedRoutes).url),
        samples.map((s) => s.routed_experts.url),
      );
      const verl = await exported(gw, id, "verl");
      assert.deepEqual(
        verl.map((s) => (s.routed_experts as ExportedRoutes).url),
        samples.map((s) => `${s.routed_experts.url}?layout=verl`),
      );
      const jsonl = await exported(gw, id, "jsonl");
      assert.deepEqual(
        jsonl.map((s) => (s.routed_experts as ExportedRoutes).url),
        samples.map((s) => s.routed_experts.url),
      );
    } finally {
      await gw.close();
    }
  });
}

Deno.test("SGLang is asked only for the rows its chain has not recorded", async () => {
  const gw = await startGateway({ moe: TEST_MOE });
  try {
    const { token } = await gw.openSession();
    await moeEpisode(gw, token);
    const width = rowWidth(TEST_MOE);
    for (const call of gw.engine.calls) {
      assert.ok(call.routes, `call ${call.rid} reported routes`);
      const rows = call.routes.values.length / width;
      assert.equal(call.routes.start + rows, call.inputIds.length + call.output!.length - 1);
    }
    // A later turn's rows are its delta and output, not its history.
    const later = gw.engine.calls.slice(1).filter((call) => call.routesFrom! > 0);
    assert.ok(later.length >= 10);
    for (const call of later) {
      assert.ok(call.routesFrom! >= call.inputIds.length - 2_000, "only the new part asked");
    }
  } finally {
    await gw.close();
  }
});

for (const { api, form } of FORMS.slice(0, 2)) {
  Deno.test(`a worker killed mid-episode gives the first recorded rows and the flag, on ${api}`, async () => {
    const gw = await startGateway({
      moe: TEST_MOE,
      env: engineEnv(api),
      vllmRoutes: form,
      workers: 2,
    });
    try {
      const { id, token } = await gw.openSession();
      const fleet = gw.fleet!;
      // After the main agent's fourth turn its worker dies: the fifth lands on the other one.
      await moeEpisode(gw, token, async (turns) => {
        if (turns !== 4) return;
        const busy = fleet.workers.find((worker) => worker.calls.length > 0)!;
        await busy.kill();
      });
      const calls = fleet.workers.flatMap((worker) => worker.calls);
      const samples = await exported(gw, id) as unknown as (SampleJson & {
        routed_experts: ExportedRoutes;
      })[];
      const first = samples.find((s) => s.kind === "wipe")!;
      const moved = first.turns.findIndex((turn) =>
        turn.flags.includes("engine_failover") || turn.flags.includes("routing_mismatch")
      );
      assert.ok(moved >= 0, "a turn went to the other worker");
      assert.ok(first.turns[moved].flags.includes("routing_mismatch"), "its recompute is flagged");
      assert.ok(first.routed_experts.mismatched_turns >= 1);
      // The export keeps the rows first recorded, for every position.
      const tokens = first.prompt_ids.length + first.response_ids.length;
      const npy = await fetchRoutes(gw, first.routed_experts.url);
      assert.deepEqual(npy.values, expectedRows(calls, first, tokens - 1, TEST_MOE));
      assertSlimeRoutes(npy.values, npy.shape, tokens, TEST_MOE, first.routed_experts.missing_rows);
      // The count the record keeps is the rows the recompute really changed.
      const [chain] = (await listChains(gw.kv, id)).filter((c) => c.id === first.chain_id);
      const record = (await readLiveTurns(gw.kv, chain))[moved];
      const recompute = calls.find((call) =>
        call.routes?.start === 0 && call.inputIds.length === record.inputLen
      )!;
      const width = rowWidth(TEST_MOE);
      const before = expectedRows(
        calls.filter((call) => call.receivedAt < recompute.receivedAt),
        first,
        record.routes!.start,
        TEST_MOE,
      );
      let differing = 0;
      for (let r = 0; r < record.routes!.start; r++) {
        const a = before.slice(r * width, (r + 1) * width);
        const b = Array.from(recompute.routes!.values.subarray(r * width, (r + 1) * width));
        if (a.some((v, i) => v !== b[i])) differing++;
      }
      assert.ok(differing > 0);
      assert.equal(record.routes!.mismatched, differing);
      const metrics = await (await gw.fetch("/metrics", {
        headers: { authorization: `Bearer ${"test-admin-token-0123456789"}` },
      })).text();
      assert.match(
        metrics,
        new RegExp(`rollout_gateway_routing_mismatch_rows_total\\{[^}]*\\} ${differing}\\b`),
      );
      assert.match(
        metrics,
        /rollout_gateway_turn_flags_total\{[^}]*flag="routing_mismatch"[^}]*\} 1\b/,
      );
    } finally {
      await gw.close();
    }
  });
}

for (
  const { api, form, env, label } of [
    { api: "sglang", form: "npy", env: { ENGINE_SESSIONS: "true" }, label: "in engine sessions" },
    { api: "sglang", form: "npy", env: {}, label: "with aborts resumed" },
    { api: "vllm", form: "npy", env: {}, label: "with aborts resumed" },
  ] as const
) {
  Deno.test(`a MoE episode's routes are the engine's rows on ${api}, ${label}`, async () => {
    let calls = 0;
    // Every fourth call is aborted after two tokens, as a weight update aborts it; it resumes.
    const faultFor = label.includes("aborts")
      ? () => (++calls % 4 === 0 ? { kind: "abort" as const, after: 2 } : undefined)
      : undefined;
    const gw = await startGateway({
      moe: TEST_MOE,
      env: { ...engineEnv(api), ...env },
      vllmRoutes: form,
      faultFor,
    });
    try {
      const { id, token } = await gw.openSession();
      await moeEpisode(gw, token);
      if (env.ENGINE_SESSIONS) assert.ok(gw.engine.sessions.opened.length >= 3);
      if (faultFor) assert.ok(gw.engine.calls.some((call) => call.routes === undefined));
      const samples = await exported(gw, id) as unknown as (SampleJson & {
        routed_experts: ExportedRoutes;
      })[];
      for (const sample of samples) {
        const tokens = sample.prompt_ids.length + sample.response_ids.length;
        const npy = await fetchRoutes(gw, sample.routed_experts.url);
        assert.deepEqual(npy.values, expectedRows(gw.engine.calls, sample, tokens - 1, TEST_MOE));
        assert.equal(sample.routed_experts.mismatched_turns, 0);
      }
    } finally {
      await gw.close();
    }
  });
}

Deno.test("GET /sessions/:id/routes/:chain refuses a chain without routes, an unknown one, a bad layout and a session token", async () => {
  const withMoe = await startGateway({ moe: TEST_MOE });
  const without = await startGateway();
  try {
    const admin = { authorization: "Bearer test-admin-token-0123456789" };
    const { id, token } = await withMoe.openSession();
    await moeEpisode(withMoe, token);
    const status = async (gw: typeof withMoe, path: string, headers = admin) => {
      const response = await gw.fetch(path, { headers });
      const body = await response.json();
      return [response.status, body.error?.type, body.error?.message];
    };
    assert.deepEqual(await status(withMoe, `/sessions/${id}/routes/c9`), [
      404,
      "not_found_error",
      `Session "${id}" has no chain "c9"`,
    ]);
    const [code, type, message] = await status(
      withMoe,
      `/sessions/${id}/routes/c0?layout=megatron`,
    );
    assert.deepEqual([code, type], [400, "invalid_request_error"]);
    assert.match(message, /layout/);
    assert.deepEqual(
      (await status(withMoe, `/sessions/${id}/routes/c0`, { authorization: `Bearer ${token}` }))[0],
      403,
    );
    assert.equal(
      (await status(withMoe, `/sessions/sess_000000000000000000000000/routes/c0`))[0],
      404,
    );
    // A gateway that records none.
    const other = await without.openSession();
    await without.anthropic(other.token).messages.create({
      model: "m",
      max_tokens: 16,
      messages: [{ role: "user", content: "hi" }],
    });
    assert.deepEqual(await status(without, `/sessions/${other.id}/routes/c0`), [
      404,
      "not_found_error",
      "This gateway records no routed experts (ROUTED_EXPERTS is off)",
    ]);
    const [sample] = await exported(without, other.id);
    assert.equal("routed_experts" in sample, false);
  } finally {
    await withMoe.close();
    await without.close();
  }
});
