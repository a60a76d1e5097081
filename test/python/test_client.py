"""The Python client against a running gateway: one tool-using episode driven over
/v1/messages, rewarded, closed and exported as samples, slime and verl; and every typed error.

Needs GATEWAY_URL and ADMIN_TOKEN in the environment, and a gateway whose engine answers
"List the files" with a Bash tool call (test/python/client_test.ts starts one).
"""

import http.server
import io
import json
import os
import threading
import unittest
import urllib.error
import urllib.request
import uuid

from rollout_gateway import (
    AuthenticationError,
    flatten_tree,
    pack_tree,
    ConflictError,
    Gateway,
    GatewayConnectionError,
    GatewayError,
    InvalidRequestError,
    NotFoundError,
    OverloadedError,
    PermissionDeniedError,
    RequestTooLargeError,
    JobList,
    RolloutGroup,
    SampleList,
    Session,
    TaskInvalidError,
    UnavailableError,
)

GATEWAY_URL = os.environ.get("GATEWAY_URL", "")
ADMIN_TOKEN = os.environ.get("ADMIN_TOKEN", "")
RUN = uuid.uuid4().hex[:8]  # keeps ids apart when the same gateway serves several runs

BASH = {
    "name": "Bash",
    "description": "Run a shell command.",
    "input_schema": {
        "type": "object",
        "properties": {"command": {"type": "string"}},
        "required": ["command"],
    },
}


def setUpModule():
    if not GATEWAY_URL or not ADMIN_TOKEN:
        raise RuntimeError("Set GATEWAY_URL and ADMIN_TOKEN to a running gateway")


def gateway(token=ADMIN_TOKEN):
    return Gateway(GATEWAY_URL, token, timeout=30)


def post_messages(token, messages, header="x-api-key"):
    """POST /v1/messages as an agent; returns (status, parsed body)."""
    body = {"model": "qwen3-test", "max_tokens": 256, "tools": [BASH], "messages": messages}
    auth = {"x-api-key": token} if header == "x-api-key" else {"authorization": f"Bearer {token}"}
    request = urllib.request.Request(
        GATEWAY_URL + "/v1/messages",
        data=json.dumps(body).encode(),
        headers={"content-type": "application/json", "anthropic-version": "2023-06-01", **auth},
        method="POST",
    )
    try:
        with urllib.request.urlopen(request, timeout=30) as response:
            return response.status, json.loads(response.read())
    except urllib.error.HTTPError as error:
        with error:
            return error.code, json.loads(error.read())


def converse(test, token, user_texts):
    """Drives one turn per user text, answering every tool call; returns (messages, replies)."""
    messages, replies = [], []
    for text in user_texts:
        messages.append({"role": "user", "content": text})
        while True:
            header = "x-api-key" if len(replies) % 2 == 0 else "bearer"
            status, reply = post_messages(token, messages, header)
            test.assertEqual(status, 200, reply)
            test.assertEqual(reply["type"], "message")
            replies.append(reply)
            messages.append({"role": "assistant", "content": reply["content"]})
            calls = [block for block in reply["content"] if block["type"] == "tool_use"]
            if not calls:
                break
            test.assertEqual(reply["stop_reason"], "tool_use")
            messages.append({
                "role": "user",
                "content": [
                    {"type": "tool_result", "tool_use_id": call["id"], "content": "README.md\nsrc"}
                    for call in calls
                ],
            })
    return messages, replies


class EpisodeTest(unittest.TestCase):
    """One episode: a tool call, its result, a follow-up; rewarded, closed, exported."""

    SCORE = 0.75

    @classmethod
    def setUpClass(cls):
        cls.gw = gateway()
        cls.session = cls.gw.open_session(
            id=f"py-episode-{RUN}", metadata={"suite": f"python-{RUN}", "kind": "episode"}
        )
        cls.messages, cls.replies = converse(
            unittest.TestCase(), cls.session.token, ["List the files, please.", "Thanks!"]
        )
        cls.rewarded = cls.gw.set_reward(cls.session.id, cls.SCORE, tests_passed=3, log="ok")
        cls.closed = cls.gw.close_session(cls.session.id)
        cls.default = cls.gw.samples(cls.session.id)

    def test_01_session_is_a_frozen_dataclass_with_a_hidden_token(self):
        self.assertIsInstance(self.session, Session)
        self.assertTrue(self.session.token.startswith(self.session.id + "."))
        self.assertNotIn(self.session.token, repr(self.session))
        with self.assertRaises(Exception):
            self.session.id = "other"  # type: ignore[misc]

    def test_02_the_agent_got_a_tool_call_then_text(self):
        self.assertEqual(len(self.replies), 3)
        self.assertEqual(self.replies[0]["content"][-1]["name"], "Bash")
        self.assertEqual(self.replies[0]["content"][-1]["input"], {"command": "ls"})
        for reply in self.replies[1:]:
            self.assertEqual(reply["stop_reason"], "end_turn")
            self.assertEqual([block["type"] for block in reply["content"]][-1], "text")

    def test_03_reward_and_close_return_the_view(self):
        reward = {"score": self.SCORE, "tests_passed": 3, "log": "ok"}
        self.assertEqual(self.rewarded["reward"], reward)
        self.assertEqual(self.rewarded["status"], "open")
        self.assertEqual(self.closed["status"], "closed")
        self.assertIsNotNone(self.closed["closed_at"])
        self.assertIsNotNone(self.closed["expires_at"])
        view = self.gw.get_session(self.session.id)
        self.assertEqual(view["id"], self.session.id)
        self.assertEqual(view["metadata"], {"suite": f"python-{RUN}", "kind": "episode"})
        self.assertEqual(len(view["chains"]), 1)
        chain = view["chains"][0]
        self.assertEqual((chain["kind"], chain["turns"]), ("final", 3))
        sample = self.default[0]
        self.assertEqual(chain["tokens"], len(sample["prompt_ids"]) + len(sample["response_ids"]))

    def test_04_default_samples_cover_three_turns(self):
        self.assertIsInstance(self.default, SampleList)
        self.assertIsInstance(self.default, list)
        self.assertEqual(self.default.dropped, [])
        self.assertEqual(len(self.default), 1)
        sample = self.default[0]
        self.assertEqual(sample["kind"], "final")
        n = len(sample["response_ids"])
        self.assertEqual(len(sample["loss_mask"]), n)
        self.assertEqual(len(sample["logprobs"]), n)
        self.assertEqual(len(sample["turns"]), 3)
        self.assertEqual(
            [turn["input_len"] for turn in sample["turns"]],
            [reply["usage"]["input_tokens"] for reply in self.replies],
        )
        self.assertEqual(set(sample["loss_mask"]), {0, 1}, "sampled tokens and tool output")
        sampled = sum(turn["output_len"] for turn in sample["turns"])
        self.assertEqual(sum(sample["loss_mask"]), sampled)
        for mask, logprob in zip(sample["loss_mask"], sample["logprobs"]):
            if mask == 1:
                self.assertLess(logprob, 0)

    def test_05_slime_samples(self):
        (slime,) = self.gw.samples(self.session.id, format="slime")
        sample = self.default[0]
        self.assertEqual(slime["tokens"], sample["prompt_ids"] + sample["response_ids"])
        self.assertEqual(slime["response_length"], len(sample["response_ids"]))
        self.assertEqual(len(slime["loss_mask"]), slime["response_length"])
        self.assertEqual(len(slime["rollout_log_probs"]), slime["response_length"])
        self.assertEqual(slime["loss_mask"], sample["loss_mask"])
        self.assertEqual(slime["rollout_log_probs"], sample["logprobs"])
        self.assertEqual(slime["reward"], self.SCORE)
        self.assertEqual(slime["status"], "completed")
        self.assertEqual(slime["metadata"]["session_id"], self.session.id)
        # Its old name, kept one release.
        self.assertEqual(slime["metadata"]["rollout_id"], self.session.id)
        self.assertEqual(slime["metadata"]["kind"], "final")
        self.assertEqual(slime["metadata"]["stats"]["turns"], 3)

    def test_06_verl_samples(self):
        (verl,) = self.gw.samples(self.session.id, format="verl")
        sample = self.default[0]
        self.assertEqual(verl["prompt_ids"], sample["prompt_ids"])
        self.assertEqual(verl["response_ids"], sample["response_ids"])
        self.assertEqual(len(verl["response_mask"]), len(verl["response_ids"]))
        self.assertEqual(len(verl["response_logprobs"]), len(verl["response_ids"]))
        self.assertEqual(verl["reward_score"], self.SCORE)
        self.assertEqual(verl["num_turns"], 6)
        self.assertEqual(verl["metrics"]["tool_calls"], 1)
        self.assertEqual(verl["extra_fields"]["stats"]["finish_reason"], "end_of_turn")
        self.assertEqual(verl["extra_fields"]["session_id"], self.session.id)

    def test_07_jsonl_and_raw(self):
        (line,) = self.gw.samples(self.session.id, format="jsonl")
        sample = self.default[0]
        self.assertEqual(line["session_id"], self.session.id)
        self.assertEqual(line["prompt_ids"], sample["prompt_ids"])
        self.assertEqual(line["prompt_len"], len(sample["prompt_ids"]))
        self.assertEqual(line["response_len"], len(sample["response_ids"]))
        self.assertEqual(line["tool_turns"], 1)
        self.assertEqual(line["reward"], self.SCORE)
        self.assertEqual(line["reward_payload"]["score"], self.SCORE)
        self.assertIn("List the files, please.", line["raw_prompt"])
        raw = self.gw.samples(self.session.id, format="raw")
        self.assertIsInstance(raw, dict)
        self.assertEqual(raw["session"]["id"], self.session.id)
        self.assertEqual(len(raw["chains"][0]["turns"]), 3)

    def test_07b_raw_keys_are_snake_case(self):
        raw = self.gw.samples(self.session.id, format="raw")
        (chain,) = raw["chains"]
        self.assertEqual(
            (chain["session_id"], chain["wiped_at"], chain["turn_count"]),
            (self.session.id, None, 3),
        )
        turns = chain["turns"]
        self.assertEqual(
            [turn["input_len"] for turn in turns],
            [reply["usage"]["input_tokens"] for reply in self.replies],
        )
        self.assertEqual(
            [turn["output_len"] for turn in turns],
            [len(turn["tokens"]["output"]) for turn in turns],
        )
        self.assertEqual([turn["finish_reason"] for turn in turns], ["end_of_turn"] * 3)
        self.assertEqual([turn["tool_calls"] for turn in turns], [1, 0, 0])
        self.assertEqual(
            list(turns[0]["timings"]), ["render_ms", "engine_ms", "engine_reported_ms", "total_ms"]
        )

        def camel_keys(value, path="$"):
            """Every key path under ``value`` whose key has a capital letter."""
            if isinstance(value, list):
                return [k for i, item in enumerate(value) for k in camel_keys(item, f"{path}[{i}]")]
            if not isinstance(value, dict):
                return []
            found = [f"{path}.{key}" for key in value if key != key.lower()]
            nested = [k for key, inner in value.items() for k in camel_keys(inner, f"{path}.{key}")]
            return found + nested

        self.assertEqual(camel_keys(raw), [])

    def test_08_the_closed_session_refuses_the_agent(self):
        status, body = post_messages(self.session.token, self.messages + [
            {"role": "user", "content": "One more thing."}
        ])
        self.assertEqual(status, 409, body)
        self.assertEqual(body["type"], "error")
        self.assertEqual(body["error"]["type"], "conflict_error")
        self.assertTrue(body["request_id"].startswith("req_"))
        self.assertEqual(self.gw.get_session(self.session.id)["chains"][0]["turns"], 3)

    def test_09_unknown_format_is_invalid(self):
        with self.assertRaises(InvalidRequestError):
            self.gw.samples(self.session.id, format="csv")

    def test_10_weight_versions_and_staleness(self):
        sample = self.default[0]
        spans = sample["version_spans"]
        self.assertEqual([span["version"] for span in spans], ["default"] * 3, "one per turn")
        sampled = sum(span["end"] - span["start"] for span in spans)
        self.assertEqual(sampled, sum(sample["loss_mask"]))
        # "default" counts as version 0: two behind version 2, past a staleness of 1.
        (stale,) = self.gw.samples(self.session.id, max_staleness=1, current_version=2)
        self.assertEqual(sum(stale["loss_mask"]), 0)
        self.assertEqual(stale["stale_tokens"], sum(sample["loss_mask"]))
        (fresh,) = self.gw.samples(self.session.id, max_staleness=2, current_version="2")
        self.assertEqual(fresh["loss_mask"], sample["loss_mask"])
        dropped = self.gw.samples(self.session.id, max_staleness=0, current_version=1, stale="drop")
        self.assertEqual(dropped, [])
        self.assertEqual(dropped.dropped, [{
            "chain_id": "c0", "kind": "final",
            "reason": f"{sum(sample['loss_mask'])} tokens sampled by weight versions older than 1",
        }])

    def test_11_engine_controls_reach_the_engine(self):
        before = self.gw.weight_versions()
        self.assertEqual(len(before), 1)
        paused = self.gw.pause_engine("retract")
        self.assertEqual(paused["mode"], "retract")
        self.assertEqual([worker["url"] for worker in paused["workers"]], [before[0]["url"]])
        try:
            self.gw.set_weight_version(before[0]["version"])
        finally:
            self.gw.continue_engine()
        self.assertEqual(self.gw.weight_versions(), before)
        with self.assertRaises(InvalidRequestError):
            self.gw.pause_engine("later")

    def test_12_an_image_the_session_does_not_hold_is_not_found(self):
        with self.assertRaises(NotFoundError):
            self.gw.image(self.session.id, "0" * 64)


class AllocationTest(unittest.TestCase):
    """A session of two segments (a conversation, then a new one that replaces it), opened with
    ``reward_allocation="final_only"``: the score goes to the final segment, and an export that
    keeps one segment says which it dropped."""

    @classmethod
    def setUpClass(cls):
        cls.gw = gateway()
        cls.session = cls.gw.open_session(
            id=f"py-allocation-{RUN}", reward_allocation="final_only"
        )
        converse(unittest.TestCase(), cls.session.token, ["List the files, please."])
        # The same tools, a new first message: a new main conversation; the first one is a wipe.
        converse(unittest.TestCase(), cls.session.token, ["Thanks!"])
        cls.gw.set_reward(cls.session.id, 1.0)

    def test_the_sessions_allocation_gives_the_final_segment_the_score(self):
        samples = self.gw.samples(self.session.id)
        self.assertEqual(
            [(s["chain_id"], s["kind"]) for s in samples], [("c0", "wipe"), ("c1", "final")]
        )
        self.assertEqual([s["reward"] for s in samples], [0, 1])
        self.assertEqual(samples.dropped, [])
        # An export's own allocation overrides the session's.
        shared = self.gw.samples(self.session.id, reward_allocation="uniform")
        self.assertEqual([s["reward"] for s in shared], [0.5, 0.5])

    def test_dropped_names_the_segments_an_export_left_out(self):
        dropped = [{"chain_id": "c0", "kind": "wipe", "reason": "over max_segments 1"}]
        for format in ("samples", "slime", "verl", "xtuner"):
            with self.subTest(format):
                exported = self.gw.samples(self.session.id, format=format, max_segments=1)
                self.assertIsInstance(exported, SampleList)
                self.assertEqual(len(exported), 1)
                self.assertEqual(exported.dropped, dropped)
        (slime,) = self.gw.samples(self.session.id, format="slime", max_segments=1)
        self.assertEqual((slime["metadata"]["kind"], slime["reward"]), ("final", 1))
        lines = self.gw.samples(self.session.id, format="jsonl", max_segments=1)
        self.assertEqual([line["kind"] for line in lines], ["final"])
        self.assertIsNone(lines.dropped, "JSON lines carry no dropped")

    def test_an_unknown_allocation_is_invalid(self):
        with self.assertRaises(InvalidRequestError) as caught:
            self.gw.open_session(reward_allocation="winner_takes_all")
        self.assertIn("reward_allocation", caught.exception.message)


class ErrorsTest(unittest.TestCase):
    """Each error status of the trainer API arrives as its own exception type."""

    @classmethod
    def setUpClass(cls):
        cls.gw = gateway()
        cls.session = cls.gw.open_session(id=f"py-errors-{RUN}")

    def assert_envelope(self, error, status, type_):
        self.assertEqual(error.status, status)
        self.assertEqual(error.type, type_)
        self.assertTrue(error.message)
        self.assertTrue(error.request_id.startswith("req_"), error.request_id)

    def test_wrong_admin_token_is_an_authentication_error(self):
        with self.assertRaises(AuthenticationError) as caught:
            gateway("not-the-admin-token-at-all").get_session(self.session.id)
        self.assert_envelope(caught.exception, 401, "authentication_error")

    def test_a_session_token_is_denied_the_trainer_api(self):
        with self.assertRaises(PermissionDeniedError) as caught:
            list(gateway(self.session.token).list_sessions())
        self.assert_envelope(caught.exception, 403, "permission_error")
        with self.assertRaises(PermissionDeniedError):
            gateway(self.session.token).samples(self.session.id)

    def test_unknown_id_is_not_found(self):
        missing = f"py-missing-{RUN}"
        calls = {
            "get_session": lambda: self.gw.get_session(missing),
            "set_reward": lambda: self.gw.set_reward(missing, 1.0),
            "close_session": lambda: self.gw.close_session(missing),
            "delete_session": lambda: self.gw.delete_session(missing),
            "samples": lambda: self.gw.samples(missing, format="slime"),
        }
        for name, call in calls.items():
            with self.subTest(name), self.assertRaises(NotFoundError) as caught:
                call()
            self.assert_envelope(caught.exception, 404, "not_found_error")

    def test_duplicate_id_is_a_conflict(self):
        with self.assertRaises(ConflictError) as caught:
            self.gw.open_session(id=self.session.id)
        self.assert_envelope(caught.exception, 409, "conflict_error")

    def test_bad_ids_and_rewards_are_invalid_requests(self):
        with self.assertRaises(InvalidRequestError) as caught:
            self.gw.open_session(id="has spaces/and slashes")
        self.assert_envelope(caught.exception, 400, "invalid_request_error")
        for score in ("high", None, [1]):
            with self.subTest(score=score), self.assertRaises(InvalidRequestError) as caught:
                self.gw.set_reward(self.session.id, score)  # type: ignore[arg-type]
            self.assertIn("score", caught.exception.message)
        self.assertIsNone(self.gw.get_session(self.session.id)["reward"])

    def test_non_finite_numbers_are_refused_naming_where_they_are(self):
        # NaN and infinity are not JSON: the client refuses them before sending, naming the field.
        refused = {
            "score is nan": lambda: self.gw.set_reward(self.session.id, float("nan")),
            "score is -inf": lambda: self.gw.set_reward(self.session.id, float("-inf")),
            "tests.durations[1] is inf": lambda: self.gw.set_reward(
                self.session.id, 1.0, tests={"durations": [0.5, float("inf")]}
            ),
            "metadata.budget is nan": lambda: self.gw.open_session(
                id=f"py-nan-{RUN}", metadata={"budget": float("nan")}
            ),
        }
        for message, call in refused.items():
            with self.subTest(message), self.assertRaises(ValueError) as caught:
                call()
            self.assertEqual(str(caught.exception), f"{message}: expected a finite number")
        # An integer too large for a double reaches the gateway as an infinity: it names it too.
        for score, evidence, where in ((10**400, {}, "score"), (1.0, {"big": -10**400}, "big")):
            with self.subTest(where), self.assertRaises(InvalidRequestError) as caught:
                self.gw.set_reward(self.session.id, score, **evidence)
            self.assertTrue(caught.exception.message.startswith(f"{where}: "), caught.exception)
            self.assertIn("Infinity", caught.exception.message)
        self.assertIsNone(self.gw.get_session(self.session.id)["reward"])
        with self.assertRaises(NotFoundError):
            self.gw.get_session(f"py-nan-{RUN}")

    def test_delete_removes_the_session(self):
        session = self.gw.open_session(id=f"py-deleted-{RUN}")
        self.assertIsNone(self.gw.delete_session(session.id))
        with self.assertRaises(NotFoundError):
            self.gw.get_session(session.id)
        with self.assertRaises(NotFoundError):
            self.gw.delete_session(session.id)
        status, body = post_messages(session.token, [{"role": "user", "content": "hi"}])
        self.assertEqual((status, body["error"]["type"]), (404, "not_found_error"), body)

    def test_an_unreachable_gateway_is_a_connection_error(self):
        with self.assertRaises(GatewayConnectionError) as caught:
            Gateway("http://127.0.0.1:9", ADMIN_TOKEN, timeout=5).get_session("x")
        self.assertEqual(caught.exception.status, 0)
        self.assertIsInstance(caught.exception, GatewayError)


class ListingTest(unittest.TestCase):
    """list_sessions filters by status and metadata and follows next_cursor across pages."""

    @classmethod
    def setUpClass(cls):
        cls.gw = gateway()
        cls.suite = f"listing-{RUN}"
        cls.ids = [
            cls.gw.open_session(
                id=f"py-list-{RUN}-{n}", metadata={"suite": cls.suite, "n": n, "odd": n % 2 == 1}
            ).id
            for n in range(4)
        ]
        cls.gw.open_session(id=f"py-list-{RUN}-other", metadata={"suite": "another"})
        cls.gw.close_session(cls.ids[0])
        for id, score in zip(cls.ids[1:], (0.25, 0.75, 1)):  # ids[0] has no reward
            cls.gw.set_reward(id, score)

    def test_metadata_filter_pages_through_every_match(self):
        listed = list(self.gw.list_sessions(metadata={"suite": self.suite}, page_size=1))
        self.assertEqual([view["id"] for view in listed], self.ids)
        self.assertTrue(all(view["metadata"]["suite"] == self.suite for view in listed))

    def test_filters_combine(self):
        def ids(**kwargs):
            return [view["id"] for view in self.gw.list_sessions(page_size=2, **kwargs)]

        suite = {"suite": self.suite}
        self.assertEqual(ids(status="closed", metadata=suite), self.ids[:1])
        self.assertEqual(ids(status="open", metadata=suite), self.ids[1:])
        self.assertEqual(ids(metadata={**suite, "n": 2}), [self.ids[2]])
        self.assertEqual(ids(metadata={**suite, "odd": True}), [self.ids[1], self.ids[3]])
        self.assertEqual(ids(metadata={"suite": f"none-{RUN}"}), [])

    def test_reward_bounds_keep_rewarded_sessions_between_them(self):
        def ids(**kwargs):
            listed = self.gw.list_sessions(metadata={"suite": self.suite}, page_size=2, **kwargs)
            return [view["id"] for view in listed]

        self.assertEqual(ids(reward_min=0), self.ids[1:], "an unrewarded session is left out")
        self.assertEqual(ids(reward_min=0.5), self.ids[2:])
        self.assertEqual(ids(reward_max=0.75), self.ids[1:3], "bounds are inclusive")
        self.assertEqual(ids(reward_min=0.25, reward_max=0.25), self.ids[1:2])
        self.assertEqual(ids(reward_min=0.5, reward_max=1, status="open"), self.ids[2:])
        self.assertEqual(ids(reward_min=1e-3, reward_max=0.2), [])
        for name, bound in (("reward_min", float("nan")), ("reward_max", float("inf")),
                            ("reward_min", "high"), ("reward_max", True)):
            with self.subTest(name=name, bound=bound), self.assertRaises(ValueError) as caught:
                next(self.gw.list_sessions(**{name: bound}))
            self.assertTrue(str(caught.exception).startswith(f"{name} is "), caught.exception)

    def test_all_sessions_without_a_filter(self):
        listed = {view["id"] for view in self.gw.list_sessions(page_size=3)}
        self.assertTrue(set(self.ids) <= listed)
        self.assertIn(f"py-list-{RUN}-other", listed)

    def test_bad_page_size_and_status_are_invalid(self):
        for kwargs in ({"page_size": 0}, {"page_size": 1001}, {"status": "pending"}):
            with self.subTest(**kwargs), self.assertRaises(InvalidRequestError):
                next(self.gw.list_sessions(**kwargs))


class ErrorParsingTest(unittest.TestCase):
    """Responses the gateway itself rarely gives, from a local stand-in server."""

    @classmethod
    def setUpClass(cls):
        class Handler(http.server.BaseHTTPRequestHandler):
            def do_GET(self):  # noqa: N802
                status, headers, body = ANSWERS[self.path.split("/")[2]]
                self.send_response(status)
                for name, value in headers.items():
                    self.send_header(name, value)
                self.send_header("content-length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)

            def log_message(self, *args):
                pass

        envelope = lambda type_: json.dumps(  # noqa: E731
            {"type": "error", "error": {"type": type_, "message": "Busy"}, "request_id": "req_1"}
        ).encode()
        ANSWERS = {
            "overloaded-ms": (529, {"retry-after-ms": "2500", "retry-after": "3",
                                    "x-should-retry": "true"}, envelope("overloaded_error")),
            "overloaded-s": (529, {"retry-after": "4"}, envelope("overloaded_error")),
            "overloaded-none": (529, {}, envelope("overloaded_error")),
            "too-large": (413, {}, envelope("request_too_large")),
            "html": (502, {"content-type": "text/html"}, b"<html>Bad Gateway</html>"),
            "html-404": (404, {"request-id": "req_2"}, b"Not Found"),
            "server": (500, {}, envelope("api_error")),
            "unavailable": (503, {}, envelope("unavailable_error")),
        }
        cls.server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        cls.thread = threading.Thread(target=cls.server.serve_forever, daemon=True)
        cls.thread.start()
        cls.gw = Gateway(f"http://127.0.0.1:{cls.server.server_address[1]}/", ADMIN_TOKEN)

    @classmethod
    def tearDownClass(cls):
        cls.server.shutdown()
        cls.server.server_close()

    def error(self, name):
        with self.assertRaises(GatewayError) as caught:
            self.gw.get_session(name)
        return caught.exception

    def test_overloaded_carries_retry_after_in_seconds(self):
        waits = {"overloaded-ms": 2.5, "overloaded-s": 4.0, "overloaded-none": None}
        for name, wait in waits.items():
            with self.subTest(name):
                error = self.error(name)
                self.assertIsInstance(error, OverloadedError)
                self.assertEqual((error.status, error.type), (529, "overloaded_error"))
                self.assertEqual(error.retry_after, wait)

    def test_request_too_large(self):
        error = self.error("too-large")
        self.assertIsInstance(error, RequestTooLargeError)
        self.assertEqual((error.status, error.request_id), (413, "req_1"))

    def test_a_body_that_is_not_the_envelope_keeps_status_and_text(self):
        error = self.error("html")
        self.assertIs(type(error), GatewayError)
        self.assertEqual((error.status, error.type), (502, None))
        self.assertIn("Bad Gateway", error.message)
        error = self.error("html-404")
        self.assertIsInstance(error, NotFoundError)
        self.assertEqual(
            (error.type, error.message, error.request_id), (None, "Not Found", "req_2")
        )

    def test_unavailable_sandboxes(self):
        error = self.error("unavailable")
        self.assertIsInstance(error, UnavailableError)
        self.assertEqual((error.status, error.type), (503, "unavailable_error"))

    def test_other_statuses_are_plain_gateway_errors(self):
        error = self.error("server")
        self.assertIs(type(error), GatewayError)
        self.assertEqual((error.status, error.type, error.message), (500, "api_error", "Busy"))



FIXTURE = os.path.join("fixtures", "tasks", "python_unittest")


def read_fixture(name):
    with open(os.path.join(FIXTURE, name), encoding="utf-8") as file:
        return file.read()


class MinCompleteTest(unittest.TestCase):
    """``wait_rollout(min_complete=k)`` against a stand-in gateway whose group never finishes:
    one job done with the agent's outcome, one the infrastructure failed, one still running."""

    @classmethod
    def setUpClass(cls):
        def view(index, phase, outcome):
            return {"id": f"job_{index}", "index": index, "phase": phase, "outcome": outcome,
                    "progress": {"turns": 1, "tokens": 10, "elapsed_ms": 5}}

        listing = json.dumps({
            "group_id": "grp_1", "complete": False, "agent_jobs": 1, "infra_jobs": ["job_1"],
            "jobs": [view(0, "done", "agent"), view(1, "failed", "infra"),
                     view(2, "agent", None)],
        }).encode()

        class Handler(http.server.BaseHTTPRequestHandler):
            def do_GET(self):  # noqa: N802
                self.send_response(200)
                self.send_header("content-length", str(len(listing)))
                self.end_headers()
                self.wfile.write(listing)

            def log_message(self, *args):
                pass

        cls.server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        cls.thread = threading.Thread(target=cls.server.serve_forever, daemon=True)
        cls.thread.start()
        cls.gw = Gateway(f"http://127.0.0.1:{cls.server.server_address[1]}/", ADMIN_TOKEN)
        cls.group = RolloutGroup("grp_1", ["job_0", "job_1", "job_2"])

    @classmethod
    def tearDownClass(cls):
        cls.server.shutdown()
        cls.server.server_close()

    def test_returns_once_enough_jobs_have_the_agents_outcome(self):
        views = self.gw.wait_rollout(self.group, poll=0.05, timeout=5, progress=None,
                                     min_complete=1)
        self.assertEqual([v["outcome"] for v in views], ["agent", "infra", None])
        self.assertIsInstance(views, JobList)
        self.assertEqual(
            (views.group_id, views.complete, views.agent_jobs, views.infra_jobs),
            ("grp_1", False, 1, ["job_1"]),
        )

    def test_rollout_group_carries_the_groups_outcome(self):
        views = self.gw.rollout_group("grp_1")
        self.assertEqual([v["id"] for v in views], ["job_0", "job_1", "job_2"])
        self.assertEqual(
            (views.group_id, views.complete, views.agent_jobs, views.infra_jobs),
            ("grp_1", False, 1, ["job_1"]),
        )

    def test_an_infra_job_does_not_count_and_without_it_the_wait_goes_on(self):
        with self.assertRaises(TimeoutError):
            self.gw.wait_rollout(self.group, poll=0.05, timeout=0.3, progress=None,
                                 min_complete=2)
        with self.assertRaises(TimeoutError):
            self.gw.wait_rollout(self.group, poll=0.05, timeout=0.3, progress=None)


class EvaluateTest(unittest.TestCase):
    """POST /evaluate through the client: a fixture task's gold and wrong patches, the result
    handed to set_reward, and a task the gateway refuses."""

    def test_gold_scores_one_and_the_result_becomes_the_reward(self):
        gw = gateway()
        task = json.loads(read_fixture("task.json"))
        result = gw.evaluate(task, read_fixture("gold.patch"), timeout=120)
        self.assertEqual(result["score"], 1, result["log_tail"])
        self.assertEqual(result["reason"], "passed")
        self.assertTrue(result["applied_cleanly"])
        self.assertEqual(result["tests"]["failed"], [])
        session = gw.open_session(id=f"py-evaluate-{RUN}")
        view = gw.set_reward(session.id, **result)
        self.assertEqual(view["reward"]["score"], 1)
        self.assertEqual(view["reward"]["tests"], result["tests"])

    def test_wrong_scores_zero_naming_the_failing_test(self):
        task = json.loads(read_fixture("task.json"))
        result = gateway().evaluate(task, read_fixture("wrong.patch"), timeout=120)
        self.assertEqual(result["score"], 0)
        self.assertEqual(result["reason"], "tests_failed")
        self.assertEqual(result["tests"]["failed"], ["tests.test_calc.TestCalc.test_mean_fraction"])

    def test_a_task_without_a_grading_mode_is_invalid(self):
        with self.assertRaises(InvalidRequestError) as caught:
            gateway().evaluate({"repo": "fixture:python_unittest", "base_commit": "abc1234"}, "")
        self.assertIn("exactly one of eval_cmd", str(caught.exception))


class ValidateTest(unittest.TestCase):
    """POST /evaluate/validate and /rollout's validate through the client: a fixture task proven
    with its gold patch and the verdict kept, and a rollout of a broken task refused."""

    def test_the_fixture_task_is_valid_and_a_second_ask_is_kept(self):
        gw = gateway()
        task = json.loads(read_fixture("task.json"))
        first = gw.validate_task(task, read_fixture("gold.patch"), timeout=120)
        self.assertEqual((first["valid"], first["problems"], first["flaky"]), (True, [], []))
        self.assertEqual([run["reason"] for run in first["gold"]], ["passed", "passed"])
        again = gw.validate_task(task, read_fixture("gold.patch"), timeout=120)
        self.assertEqual((again["cached"], again["digest"]), (True, first["digest"]))

    def test_a_rollout_of_a_task_with_a_mistyped_test_is_refused(self):
        task = json.loads(read_fixture("task.json"))
        task["fail_to_pass"] = task["fail_to_pass"] + ["tests.test_calc.TestCalc.test_mean_fractoin"]
        with self.assertRaises(TaskInvalidError) as caught:
            gateway().submit_rollout(task, n=8, validate=True)
        self.assertEqual(caught.exception.status, 422)
        self.assertIn("at the base commit no test ran (no_tests_ran)", caught.exception.message)


class RolloutTest(unittest.TestCase):
    """A rollout group from submit to samples: the gateway's scripted model makes Claude Code
    fix the python_unittest fixture in a sandbox; the client waits and reads slime and verl."""

    def test_a_group_from_submit_to_samples(self):
        gw = gateway()
        task = json.loads(read_fixture("task.json"))
        group = gw.submit_rollout(task, n=2, metadata={"rollout_suite": RUN})
        self.assertIsInstance(group, RolloutGroup)
        self.assertEqual(len(group.job_ids), 2)
        lines = io.StringIO()
        views = gw.wait_rollout(group, poll=0.2, timeout=180, progress=lines)
        self.assertEqual([v["phase"] for v in views], ["done", "done"], views)
        self.assertEqual([v["outcome"] for v in views], ["agent", "agent"])
        self.assertIn("2/2 finished (done 2)", lines.getvalue())
        self.assertEqual([v["index"] for v in views], [0, 1])
        self.assertEqual(
            (views.group_id, views.complete, views.agent_jobs, views.infra_jobs),
            (group.group_id, True, 2, []),
        )

        slime = gw.rollout_samples(group, format="slime")
        self.assertEqual(len(slime), 2)
        for sample in slime:
            self.assertEqual(sample["reward"], 1)
            self.assertEqual(len(sample["loss_mask"]), sample["response_length"])
            self.assertEqual(len(sample["rollout_log_probs"]), sample["response_length"])
            self.assertTrue(all(isinstance(t, int) for t in sample["tokens"]))
        verl = gw.rollout_samples(group, format="verl")
        self.assertEqual([s["reward_score"] for s in verl], [1, 1])
        xtuner = gw.rollout_samples(group, format="xtuner")  # GET /rollout/:id?format=xtuner
        self.assertEqual([r["reward"]["score"] for r in xtuner], [1, 1])
        self.assertEqual([r["reward"]["reason"] for r in xtuner], ["passed", "passed"])
        for record, sample in zip(xtuner, slime):
            self.assertEqual(record["status"], "completed")
            messages = record["agent"]["messages"]
            self.assertEqual([t for m in messages for t in m["token_ids"]], sample["tokens"])

        # The group as one prefix tree: lossless, packed into one sequence.
        flat = gw.group_samples(group)
        self.assertEqual((len(flat), flat.partial, flat.dropped), (2, False, []))
        self.assertEqual([s["session_id"] for s in flat], [v["session_id"] for v in views])
        tree = gw.group_tree(group)
        self.assertEqual(flatten_tree(tree), list(flat))
        self.assertEqual(tree["stats"]["flat_tokens"],
                         sum(len(s["prompt_ids"]) + len(s["response_ids"]) for s in flat))
        self.assertGreater(tree["stats"]["saved_tokens"], 0)
        packed = pack_tree(tree)
        self.assertEqual(len(packed.tokens), tree["stats"]["tree_tokens"])
        for i, sample in enumerate(flat):
            indices = packed.leaf_tokens[i]
            self.assertEqual([packed.tokens[k] for k in indices],
                             sample["prompt_ids"] + sample["response_ids"])
            self.assertEqual([packed.position_ids[k] for k in indices], list(range(len(indices))))
            self.assertEqual([packed.loss_mask[k] for k in indices[len(sample["prompt_ids"]):]],
                             sample["loss_mask"])
            # Its last token attends to its whole path and to nothing else.
            last = indices[-1]
            on_path = set(indices)
            self.assertEqual([k for k in range(len(packed.tokens)) if packed.may_attend(last, k)],
                             sorted(on_path))
        with self.assertRaises(InvalidRequestError) as caught:
            gw.group_page(group, cursor="9")
        self.assertIn("cursor", caught.exception.message)

        view = gw.rollout(group.job_ids[0])
        self.assertIn("+    return a / b", view["result"]["patch"])
        self.assertEqual(view["result"]["reward"]["reason"], "passed")
        session = gw.get_session(view["session_id"])
        self.assertEqual(session["metadata"]["rollout_suite"], RUN)
        self.assertEqual(session["closed_as"], "completed")

    def test_min_complete_returns_once_enough_jobs_have_the_agents_outcome(self):
        gw = gateway()
        task = json.loads(read_fixture("task.json"))
        group = gw.submit_rollout(task, n=3, retry_budget=0)
        views = gw.wait_rollout(group, poll=0.1, timeout=180, progress=None, min_complete=1)
        agent = [view for view in views if view["outcome"] == "agent"]
        self.assertGreaterEqual(len(agent), 1, views)
        for view in agent:
            self.assertEqual(view["phase"], "done")
            self.assertEqual(view["result"]["reward"]["score"], 1)
        # The others are still running or done too; none is the infrastructure's.
        self.assertTrue(all(view["outcome"] in ("agent", None) for view in views), views)
        final = gw.wait_rollout(group, poll=0.2, timeout=180, progress=None)
        self.assertEqual([view["outcome"] for view in final], ["agent"] * 3)

    def test_cancelling_a_finished_job_changes_nothing_and_unknown_jobs_are_not_found(self):
        gw = gateway()
        task = json.loads(read_fixture("task.json"))
        group = gw.submit_rollout(task)
        gw.wait_rollout(group, poll=0.2, timeout=180, progress=None)
        self.assertEqual(gw.cancel_rollout(group.job_ids[0])["phase"], "done")
        with self.assertRaises(NotFoundError):
            gw.rollout("job_000000000000000000000000")
        with self.assertRaises(InvalidRequestError):
            gw.submit_rollout({"repo": "fixture:python_unittest"})


class ExportListTest(unittest.TestCase):
    """The client reads an export's list under whichever key the answer has."""

    def test_samples_or_records_whichever_the_answer_holds(self):
        from rollout_gateway import _exported_list

        self.assertEqual(_exported_list({"samples": [1], "dropped": []}), [1])
        self.assertEqual(_exported_list({"records": [2], "dropped": []}), [2])
        with self.assertRaises(ValueError):
            _exported_list({"dropped": []})


if __name__ == "__main__":
    unittest.main()
