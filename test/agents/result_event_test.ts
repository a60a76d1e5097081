import assert from "node:assert/strict";
import { readAgentLog } from "../../lib/agents/mod.ts";

Deno.test("readAgentLog() takes the last result event and ignores lines cut by the output cap", () => {
  const log = [
    '{"type":"system","subtype":"init"}',
    '{"type":"assistant","message":{"content":[{"type":"text","text":"\\"result\\""}]}}',
    '{"type":"result","subtype":"error_max_turns","num_turns":3}',
    '{"type":"result","subtype":"success","num_turns":7,"result":"Done."}',
    '{"type":"result","subtype":"succ',
  ].join("\n");
  assert.deepEqual(readAgentLog(log), { numTurns: 7, result: "success" });
  assert.deepEqual(readAgentLog("not json\n"), { numTurns: null, result: null });
});
