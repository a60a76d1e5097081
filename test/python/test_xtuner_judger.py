"""The xtuner judger example (python/examples/xtuner_judger.py) against a running gateway: an
episode over /v1/messages, judged from its ``format=xtuner`` record, rewarded through the trainer
API, and dumped as xtuner's trajectory JSONL.

Needs GATEWAY_URL and ADMIN_TOKEN in the environment, and a gateway whose engine answers "List
the files" with a Bash tool call and a tool result with "There are two entries: README.md and
src." (test/python/client_test.ts starts one).
"""

import importlib.util
import io
import json
import os
import subprocess
import sys
import tempfile
import unittest
import urllib.request
import uuid

from rollout_gateway import Gateway

GATEWAY_URL = os.environ.get("GATEWAY_URL", "")
ADMIN_TOKEN = os.environ.get("ADMIN_TOKEN", "")
RUN = uuid.uuid4().hex[:8]
ROOT = os.path.join(os.path.dirname(__file__), "..", "..")
EXAMPLE = os.path.join(ROOT, "python", "examples", "xtuner_judger.py")

BASH = {
    "name": "Bash",
    "description": "Run a shell command.",
    "input_schema": {"type": "object", "properties": {"command": {"type": "string"}}},
}


def setUpModule():
    if not GATEWAY_URL or not ADMIN_TOKEN:
        raise RuntimeError("Set GATEWAY_URL and ADMIN_TOKEN to a running gateway")


def load_example():
    spec = importlib.util.spec_from_file_location("xtuner_judger", EXAMPLE)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)  # type: ignore[union-attr]
    return module


def messages_call(token, messages):
    body = {"model": "qwen3-test", "max_tokens": 256, "tools": [BASH], "messages": messages}
    request = urllib.request.Request(
        GATEWAY_URL + "/v1/messages",
        data=json.dumps(body).encode(),
        headers={"content-type": "application/json", "x-api-key": token},
        method="POST",
    )
    with urllib.request.urlopen(request, timeout=30) as response:
        return json.loads(response.read())


def episode(gw, name, session=None, task="List the files, please."):
    """One episode: the agent lists the files with a tool call, then answers (in ``session``, a
    new conversation of it)."""
    session = session or gw.open_session(id=f"xtuner-{name}-{RUN}")
    messages = [{"role": "user", "content": task}]
    reply = messages_call(session.token, messages)
    call = [block for block in reply["content"] if block["type"] == "tool_use"][0]
    messages += [
        {"role": "assistant", "content": reply["content"]},
        {"role": "user", "content": [
            {"type": "tool_result", "tool_use_id": call["id"], "content": "README.md\nsrc"},
        ]},
    ]
    answer = messages_call(session.token, messages)
    return session, answer


def run_script(*sessions, out):
    """Runs the example as a script on ``sessions``, writing ``out``; returns the process."""
    args = [arg for session in sessions for arg in ("--session", session)]
    return subprocess.run(
        [sys.executable, EXAMPLE, *args, "--answer", "README.md", "--out", out],
        env={**os.environ, "PYTHONDONTWRITEBYTECODE": "1"},
        capture_output=True,
        text=True,
        timeout=60,
    )


def read_text(path):
    with open(path, encoding="utf-8") as file:
        return file.read()


class XtunerJudgerTest(unittest.TestCase):
    """The judger reads the episode's messages, scores it, and the records come back rewarded."""

    @classmethod
    def setUpClass(cls):
        cls.gw = Gateway(GATEWAY_URL, ADMIN_TOKEN, timeout=30)
        cls.example = load_example()

    def test_the_script_rewards_a_right_answer_and_dumps_the_trajectory(self):
        session, answer = episode(self.gw, "right")
        self.assertIn("README.md", answer["content"][-1]["text"])
        with tempfile.TemporaryDirectory() as folder:
            out = os.path.join(folder, "trajectory.jsonl")
            run = run_script(session.id, out=out)
            self.assertEqual(run.returncode, 0, run.stderr)
            first = read_text(out)
            # A re-run replaces the file: the same lines, not twice as many.
            again = run_script(session.id, out=out)
            self.assertEqual(again.returncode, 0, again.stderr)
            self.assertEqual(read_text(out), first)
            self.assertEqual(os.listdir(folder), ["trajectory.jsonl"], "nothing left beside it")
        lines = first.splitlines()
        self.assertEqual(len(lines), 1, "one line per segment")
        record = json.loads(lines[0])
        reward = {"score": 1.0, "correct": 1.0, "length_penalty": 0.0, "tool_turns": 1,
                  "response_len": record["response_len"]}
        self.assertEqual(json.loads(run.stderr.strip())["reward"], reward)
        self.assertEqual(record["reward"], reward)
        self.assertEqual(self.gw.get_session(session.id)["reward"], reward)
        self.assertEqual(record["session_id"], session.id)
        self.assertEqual(record["status"], "completed")
        self.assertEqual(record["agent"]["tool_turns"], 1)
        messages = record["agent"]["messages"]
        self.assertEqual(
            [token for m in messages for token in m["token_ids"]],
            record["prompt_ids"] + record["response_ids"],
        )
        self.assertEqual(
            [m["role"] for m in messages], ["system", "user", "assistant", "tool", "assistant"]
        )
        call = {"name": "Bash", "arguments": {"command": "ls"}}
        self.assertEqual(messages[2]["tool_calls"], [{"type": "function", "function": call}])
        self.assertIn("README.md\nsrc", messages[3]["content"])
        self.assertEqual(sum(sum(m["loss_mask"]) for m in messages if m["sampled"]),
                         sum(record["loss_mask"]))

    def test_a_session_of_two_segments_is_judged_by_its_final_one_and_dumped_whole(self):
        session, _ = episode(self.gw, "two")
        # The task again, in other words: a new conversation, which makes the first one a wipe.
        episode(self.gw, "two", session, task="List the files again.")
        with tempfile.TemporaryDirectory() as folder:
            out = os.path.join(folder, "trajectory.jsonl")
            with open(out, "w", encoding="utf-8") as file:
                file.write('{"an": "older dump"}\n')
            run = run_script(session.id, out=out)
            self.assertEqual(run.returncode, 0, run.stderr)
            records = [json.loads(line) for line in read_text(out).splitlines()]
            # A run that fails (an unknown session) leaves the file as it was, and nothing beside.
            failed = run_script(session.id, f"xtuner-missing-{RUN}", out=out)
            self.assertNotEqual(failed.returncode, 0)
            self.assertIn("NotFoundError", failed.stderr)
            self.assertEqual([json.loads(line) for line in read_text(out).splitlines()], records)
            self.assertEqual(os.listdir(folder), ["trajectory.jsonl"])
        self.assertEqual(
            [(r["chain_id"], r["kind"]) for r in records], [("c0", "wipe"), ("c1", "final")]
        )
        reward = json.loads(run.stderr.strip())["reward"]
        self.assertEqual(reward["score"], 1.0)
        self.assertEqual(reward["response_len"], records[1]["response_len"], "the final judged")
        shared = {**reward, "score": 0.5}  # the gateway's default allocation: uniform
        self.assertEqual([r["reward"] for r in records], [shared, shared])

    def test_a_wrong_answer_scores_zero_and_every_record_carries_it(self):
        session, _ = episode(self.gw, "wrong")
        out = io.StringIO()
        judged = self.example.judge_episode(self.gw, session.id, "CHANGELOG", out)
        self.assertEqual(judged["reward"]["score"], 0.0)
        self.assertEqual(judged["reward"]["correct"], 0.0)
        (record,) = [json.loads(line) for line in out.getvalue().splitlines()]
        self.assertEqual(record["reward"], judged["reward"])
        self.assertEqual(record, judged["records"][0])

    def test_the_length_penalty_and_the_token_check(self):
        session, _ = episode(self.gw, "long")
        (record,) = self.gw.samples(session.id, format="xtuner")
        self.example.check_tokens(record)
        budget = record["response_len"] // 2  # the response runs one budget over: penalty 0.5
        reward = self.example.rule_judger(record, "README.md", max_response_tokens=budget)
        over = (record["response_len"] - budget) / budget
        self.assertAlmostEqual(reward["length_penalty"], 0.5 * over)
        self.assertAlmostEqual(reward["score"], 1.0 - 0.5 * over)
        broken = dict(record, response_ids=record["response_ids"][:-1])
        with self.assertRaises(ValueError):
            self.example.check_tokens(broken)


if __name__ == "__main__":
    unittest.main()
