import assert from "node:assert/strict";
import { Dispatches } from "../../lib/session/mod.ts";

Deno.test("Dispatches: a sub-agent is let go once its dispatching call's result is read, in its own session only", () => {
  const dispatches = new Dispatches(2);
  dispatches.add("s1", "toolu_a", "s1:c1");
  dispatches.add("s1", "toolu_b", "s1:c2");
  // Another session's result with the same call id, a result of another call, a user message.
  assert.deepEqual(
    dispatches.answered("s2", [{ role: "tool", content: "x", tool_call_id: "toolu_a" }]),
    [],
  );
  assert.deepEqual(
    dispatches.answered("s1", [
      { role: "user", content: "toolu_b" },
      { role: "tool", content: "report", tool_call_id: "toolu_b" },
      { role: "tool", content: "other", tool_call_id: "toolu_z" },
    ]),
    ["s1:c2"],
  );
  // Read once: the second time it is gone.
  assert.deepEqual(
    dispatches.answered("s1", [{ role: "tool", content: "report", tool_call_id: "toolu_b" }]),
    [],
  );
  // Past its capacity the oldest is forgotten.
  dispatches.add("s1", "toolu_c", "s1:c3");
  dispatches.add("s1", "toolu_d", "s1:c4");
  assert.equal(dispatches.size, 2);
  assert.deepEqual(
    dispatches.answered("s1", [
      { role: "tool", content: "", tool_call_id: "toolu_a" },
      { role: "tool", content: "", tool_call_id: "toolu_d" },
    ]),
    ["s1:c4"],
  );
});
