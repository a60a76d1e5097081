/**
 * A local rollout agent's network: it reaches the gateway and nothing else on the host — not the
 * engine's control endpoints on loopback.
 */
import assert from "node:assert/strict";
import { startGateway } from "../_gateway.ts";
import { fixtureTask } from "../evaluate/_tasks.ts";
import { awaitJob, oneCommand, submit } from "./_rollout.ts";

Deno.test("a local rollout agent cannot reach the engine's /abort_request on loopback, but reaches the gateway", async () => {
  let enginePort = 0;
  const gw = await startGateway({
    script: (call, prompt) =>
      oneCommand(
        // The engine's own port on the host's loopback, as a policy that read its config might try.
        `(exec 3<>/dev/tcp/127.0.0.1/${enginePort} && printf 'POST /abort_request HTTP/1.0\\r\\nContent-Length: 12\\r\\n\\r\\n{"rid":"all"}' >&3 && cat <&3) 2>&1; echo "probe exit=$?; base url $ANTHROPIC_BASE_URL"`,
        "Could not reach it.",
      )(call, prompt),
    worker: true,
  });
  enginePort = Number(new URL(gw.engine.url).port);
  try {
    const { task } = await fixtureTask("python_unittest");
    const view = await awaitJob(gw, (await submit(gw, { task })).jobs[0].id);
    assert.equal(view.phase, "done", JSON.stringify(view));
    // Both turns went through the gateway to the engine...
    assert.equal(view.progress.turns, 2);
    assert.equal(gw.engine.calls.length, 2);
    // ...and the agent's own attempt at the engine was refused and never arrived.
    const toolResult = gw.tokenizer.decode(
      gw.engine.calls[1].inputIds.slice(gw.engine.calls[0].inputIds.length),
    );
    assert.match(toolResult, /Connection refused/);
    assert.match(toolResult, /probe exit=1; base url http:\/\/127\.0\.0\.1:8080/);
    assert.deepEqual(gw.engine.abortRequests, []);
  } finally {
    await gw.close();
  }
});
