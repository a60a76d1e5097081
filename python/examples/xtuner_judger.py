"""xtuner's judger in the agent loop, with the gateway as the recorder, standard library only.

As in xtuner's agent loop, a judger is a callable given the rollout state (the conversation and the
final response) that returns the reward as a dict, ``{"score": ..., **metrics}``. Here the rollout
state is the episode's trajectory record read from the gateway (``format=xtuner``: the messages
with their token ids, the lengths, the tool turns); the reward goes back through the trainer API
(``set_reward``), so every sample of the episode carries it; the rewarded records (one per segment:
the main conversation, each sub-agent's, each conversation a compaction replaced) are read back and
written as xtuner's trajectory dump, one JSON object per line. ``--out`` is replaced, never
appended to: the dump is written beside it and renamed over it once every episode is judged, so a
re-run gives the same file and a run that fails leaves the old one as it was.

The judger is rule-based: the final assistant message (its reasoning left out) contains the
expected answer → 1, else 0, less a penalty for a response longer than a token budget; its
metrics are the answer check, the penalty, the tool turns and the response length.

    GATEWAY_URL=http://127.0.0.1:8080 ADMIN_TOKEN=... \\
      python3 xtuner_judger.py --session sess_1 --answer README.md --out trajectory.jsonl
"""

import argparse
import json
import os
import re
import sys
from typing import Any, Dict, List, Optional, TextIO

sys.path.insert(0, os.path.join(os.path.dirname(__file__), ".."))
from rollout_gateway import Gateway  # noqa: E402

#: Reasoning blocks and special tokens (Qwen3's ``<think>``, ``<|im_end|>``): not the answer.
_REASONING = re.compile(r"<think>.*?</think>", re.S)
_SPECIAL = re.compile(r"<\|[^|<>]*\|>")


def check_tokens(record: Dict[str, Any]) -> None:
    """Raises ValueError unless the messages' token ids join up to ``prompt_ids + response_ids``
    and each sampled message's ``loss_mask`` and ``logprobs`` are as long as its ids."""
    joined = [token for message in record["agent"]["messages"] for token in message["token_ids"]]
    if joined != record["prompt_ids"] + record["response_ids"]:
        raise ValueError(f"Segment {record['chain_id']}: the messages are not the token arrays")
    for message in record["agent"]["messages"]:
        if message["sampled"] and not (
            len(message["loss_mask"]) == len(message["logprobs"]) == len(message["token_ids"])
        ):
            raise ValueError(f"Segment {record['chain_id']}: a message's arrays differ in length")


def final_response(record: Dict[str, Any]) -> str:
    """The text of the last sampled assistant message, without reasoning or special tokens."""
    outputs = [m for m in record["agent"]["messages"] if m["sampled"]]
    if not outputs:
        return ""
    return _SPECIAL.sub("", _REASONING.sub("", outputs[-1]["content"])).strip()


def rule_judger(
    record: Dict[str, Any],
    answer: str,
    max_response_tokens: int = 4096,
    length_penalty: float = 0.5,
) -> Dict[str, Any]:
    """The reward of one trajectory: ``score`` = correct − penalty (never below 0), where correct
    is 1 when the final response contains ``answer`` and the penalty is ``length_penalty`` per
    ``max_response_tokens`` the response runs over; the other keys are metrics."""
    correct = 1.0 if answer in final_response(record) else 0.0
    over = max(0, record["response_len"] - max_response_tokens) / max_response_tokens
    penalty = min(correct, length_penalty * over)
    return {
        "score": correct - penalty,
        "correct": correct,
        "length_penalty": penalty,
        "tool_turns": record["agent"]["tool_turns"],
        "response_len": record["response_len"],
    }


def judge_episode(
    gw: Gateway,
    session_id: str,
    answer: str,
    out: Optional[TextIO] = None,
    **judger_options: Any,
) -> Dict[str, Any]:
    """Judges an episode by its final segment, sets the reward, and writes the rewarded records
    to ``out`` (one JSON line each, xtuner's trajectory dump). Returns ``{reward, records}``."""
    records: List[Dict[str, Any]] = gw.samples(session_id, "xtuner")  # type: ignore[assignment]
    if not records:
        raise ValueError(f"Session {session_id} has no trainable segment")
    for record in records:
        check_tokens(record)
    final = next((r for r in records if r["kind"] == "final"), records[-1])
    reward = rule_judger(final, answer, **judger_options)
    metrics = {key: value for key, value in reward.items() if key != "score"}
    gw.set_reward(session_id, reward["score"], **metrics)
    rewarded = gw.samples(session_id, format="xtuner")  # each with its share of the score
    if out is not None:
        for record in rewarded:  # type: ignore[union-attr]
            out.write(json.dumps(record, ensure_ascii=False, separators=(",", ":")) + "\n")
    return {"reward": reward, "records": rewarded}


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--session", required=True, action="append", help="repeatable")
    parser.add_argument("--answer", required=True, help="what the final response must contain")
    parser.add_argument(
        "--out", default="-", help="the trajectory JSONL file, replaced (default stdout)"
    )
    parser.add_argument("--max-response-tokens", type=int, default=4096)
    args = parser.parse_args()
    gw = Gateway(os.environ["GATEWAY_URL"], admin_token=os.environ["ADMIN_TOKEN"])

    def judge_all(out: TextIO) -> None:
        for session_id in args.session:
            judged = judge_episode(
                gw, session_id, args.answer, out, max_response_tokens=args.max_response_tokens
            )
            print(json.dumps({"session": session_id, "reward": judged["reward"]}), file=sys.stderr)

    if args.out == "-":
        judge_all(sys.stdout)
        return 0
    # Written beside the target, then renamed over it (atomic on one filesystem): a re-run
    # replaces the file instead of adding to it, and a failed run leaves no half-written one.
    partial = f"{args.out}.{os.getpid()}.partial"
    try:
        with open(partial, "x", encoding="utf-8") as out:
            judge_all(out)
        os.replace(partial, args.out)
    finally:
        if os.path.exists(partial):
            os.remove(partial)
    return 0


if __name__ == "__main__":
    sys.exit(main())
