/**
 * A turn counts in the process's load from its routing to its recording, and out again however
 * it ends: answered, refused before it ran, or asking for no tokens. The adaptive encoder reads
 * this count, so a turn that never left it would send every later small text to the workers.
 */
import assert from "node:assert/strict";
import { anthropicTurnInput, type MessageCreateParams } from "../../lib/anthropic/mod.ts";
import { SessionNotFoundError, startTurn } from "../../lib/session/mod.ts";
import { startGateway } from "../_gateway.ts";

Deno.test("a turn is counted running from its start to its recording, and not after", async () => {
  const gw = await startGateway({ script: ["Hello.", "Again."] });
  try {
    const { id } = await gw.openSession();
    const input = (body: Partial<MessageCreateParams>) =>
      anthropicTurnInput(
        { model: "m", max_tokens: 64, messages: [{ role: "user", content: "hi" }], ...body },
        { sessionId: id, signingSecret: gw.deps.signingSecret },
      );
    const load = gw.deps.load!;
    assert.equal(load.running, 0);
    const turn = await startTurn(gw.deps, input({}));
    // Routed and leased; it generates and records still.
    assert.equal(load.running, 1);
    const reply = await turn.completion;
    assert.equal(reply?.type, "message");
    assert.equal(load.running, 0);

    const none = await startTurn(gw.deps, input({ max_tokens: 0 }));
    assert.equal(none.completion, null);
    assert.equal(load.running, 0);

    const missing = anthropicTurnInput(
      { model: "m", max_tokens: 64, messages: [{ role: "user", content: "hi" }] },
      { sessionId: "s_missing", signingSecret: gw.deps.signingSecret },
    );
    await assert.rejects(startTurn(gw.deps, missing), SessionNotFoundError);
    assert.equal(load.running, 0);
  } finally {
    await gw.close();
  }
});
