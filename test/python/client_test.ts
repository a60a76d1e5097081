/**
 * The Python client (python/rollout_gateway.py) against a real gateway: runs the stdlib
 * `unittest` suite in test/python/ with GATEWAY_URL and ADMIN_TOKEN pointing at a gateway over
 * loopback HTTP, whose scripted engine answers "List the files" with a Bash tool call (and the
 * judger example, python/examples/xtuner_judger.py, through test_xtuner_judger.py).
 */
import assert from "node:assert/strict";
import type { Script } from "../../lib/scripted_engine/mod.ts";
import { ADMIN_TOKEN, startGateway } from "../_gateway.ts";
import { bash, FIX_CALC } from "../rollout/_rollout.ts";

/** The model's replies, chosen by the last user turn of the prompt. */
const script: Script = (_call, promptText) => {
  const prompt = promptText();
  const lastUser = prompt.slice(prompt.lastIndexOf("<|im_start|>user"));
  if (lastUser.includes("<tool_response>")) return "There are two entries: README.md and src.";
  // A rollout of the python_unittest fixture: its problem statement names calc.divide.
  if (lastUser.includes("calc.divide")) return bash(FIX_CALC);
  if (lastUser.includes("List the files")) {
    return '<tool_call>\n{"name": "Bash", "arguments": {"command": "ls"}}\n</tool_call>';
  }
  return "You are welcome.";
};

Deno.test("the Python client drives a session, evaluations and a rollout group, reads slime, verl and xtuner samples, and its xtuner judger example rewards an episode", async () => {
  const gw = await startGateway({ script, worker: true });
  try {
    const root = new URL("../../", import.meta.url);
    const output = await new Deno.Command("python3", {
      args: ["-m", "unittest", "discover", "-s", "test/python", "-p", "test_*.py", "-v"],
      cwd: root,
      env: {
        GATEWAY_URL: gw.url,
        ADMIN_TOKEN,
        PYTHONPATH: "python",
        PYTHONDONTWRITEBYTECODE: "1",
        PYTHONUNBUFFERED: "1",
      },
      stdout: "piped",
      stderr: "piped",
    }).output();
    const text = new TextDecoder().decode(output.stdout) + new TextDecoder().decode(output.stderr);
    assert.equal(output.code, 0, `python3 -m unittest failed:\n${text}`);
    assert.match(text, /\nOK\b/, text);
    assert.doesNotMatch(text, /skipped/, text);
  } finally {
    await gw.close();
  }
});
