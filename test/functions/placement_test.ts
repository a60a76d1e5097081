/**
 * Placement by the engine's router: every engine request of a session carries the session's
 * routing key in the header its dialect's router reads (SGLang's model gateway:
 * `X-SMG-Routing-Key`; vLLM's router: `x-session-id`), sub-agents and side chains alike, so they
 * stay on the worker that has their prefix; `ENGINE_PLACEMENT=none` sends no key.
 */
import assert from "node:assert/strict";
import { resolveConfig } from "../../lib/config/mod.ts";
import {
  ADMIN_HEADERS,
  ENGINE_APIS,
  engineEnv,
  onEngine,
  startGateway,
  twoTurns,
} from "../_gateway.ts";

for (const api of ENGINE_APIS) {
  Deno.test(
    onEngine("a session's turns, its sub-agent's included, carry the session's routing key", api),
    async () => {
      const gw = await startGateway({ env: engineEnv(api), script: () => "Done." });
      try {
        const sessions = [await gw.openSession(), await gw.openSession()];
        for (const { token } of sessions) {
          const client = gw.anthropic(token);
          const messages = [{ role: "user" as const, content: "Look around." }];
          await client.messages.create({ model: "m", max_tokens: 16, messages });
          // A sub-agent Claude Code names by its header: a chain of its own in the same session.
          await client.messages.create(
            { model: "m", max_tokens: 16, system: "You are a sub-agent.", messages },
            { headers: { "x-claude-code-agent-id": "agent-1" } },
          );
        }
        assert.deepEqual(gw.engine.calls.map((call) => call.routingKey), [
          sessions[0].id,
          sessions[0].id,
          sessions[1].id,
          sessions[1].id,
        ]);
      } finally {
        await gw.close();
      }
    },
  );
}

Deno.test("ENGINE_PLACEMENT=none sends no routing key, and without CACHE_SALT no namespace", async () => {
  assert.equal(resolveConfig({}).enginePlacement, "router");
  assert.equal(resolveConfig({}).cacheSalt, "none");
  const gw = await startGateway({ env: { ENGINE_PLACEMENT: "none" }, script: () => "Done." });
  try {
    const { token } = await gw.openSession();
    await gw.anthropic(token).messages.create({
      model: "m",
      max_tokens: 16,
      messages: [{ role: "user", content: "hi" }],
    });
    assert.deepEqual(
      gw.engine.calls.map((call) => [call.routingKey, call.cacheSalt]),
      [[undefined, undefined]],
    );
  } finally {
    await gw.close();
  }
});

for (const api of ENGINE_APIS) {
  Deno.test(
    onEngine(
      "CACHE_SALT=weight_version names each request's cache namespace by the version set",
      api,
    ),
    async () => {
      const gw = await startGateway({
        env: { ...engineEnv(api), CACHE_SALT: "weight_version" },
        script: () => "Done.",
      });
      try {
        const { token } = await gw.openSession();
        const turn = (content: string) =>
          gw.anthropic(token).messages.create({
            model: "m",
            max_tokens: 16,
            messages: [{ role: "user", content }],
          });
        await turn("one");
        const set = await gw.fetch("/engine/weight_version", {
          method: "POST",
          headers: ADMIN_HEADERS,
          body: JSON.stringify({ version: "12" }),
        });
        assert.equal(set.status, 200);
        await turn("two");
        assert.deepEqual(gw.engine.calls.map((call) => call.cacheSalt), ["default", "12"]);
      } finally {
        await gw.close();
      }
    },
  );
}

for (const api of ENGINE_APIS) {
  Deno.test(
    onEngine("each turn records the prompt tokens the engine served from its prefix cache", api),
    async () => {
      const gw = await startGateway({ env: engineEnv(api), script: () => "Noted." });
      try {
        const { id, token } = await gw.openSession();
        await twoTurns(gw.anthropic(token));
        const [one, two] = gw.engine.calls;
        const raw = await gw.fetch(`/sessions/${id}/samples?format=raw`, {
          headers: ADMIN_HEADERS,
        });
        const [chain] = (await raw.json()).chains;
        // The second turn's prompt starts with everything the first one read and sampled.
        assert.deepEqual(
          chain.turns.map((turn: { cached_tokens?: number }) => turn.cached_tokens),
          [0, one.inputIds.length + one.output!.length],
        );
        assert.ok(two.inputIds.length > one.inputIds.length + one.output!.length);
      } finally {
        await gw.close();
      }
    },
  );
}

Deno.test("a weight version the workers refuse is taken back: later requests keep the old namespace", async () => {
  const gw = await startGateway({
    // A second worker nobody listens on: every set is refused there.
    env: {
      ENGINE_API: "vllm",
      CACHE_SALT: "weight_version",
      ENGINE_WORKERS: "http://127.0.0.1:9",
    },
    script: () => "Done.",
  });
  try {
    const { token } = await gw.openSession();
    const refused = await gw.fetch("/engine/weight_version", {
      method: "POST",
      headers: ADMIN_HEADERS,
      body: JSON.stringify({ version: "13" }),
    });
    assert.equal(refused.status, 503);
    await gw.anthropic(token).messages.create({
      model: "m",
      max_tokens: 16,
      messages: [{ role: "user", content: "hi" }],
    });
    assert.deepEqual(gw.engine.calls.map((call) => call.cacheSalt), ["default"]);
  } finally {
    await gw.close();
  }
});
