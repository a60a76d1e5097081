"""A mini-swe-agent-style loop over Chat Completions, Python standard library only.

One tool, ``bash``; the model's calls run in the working directory and their output goes back as
tool messages (``<returncode>``/``<output>``, as mini-swe-agent formats them) until the model
answers without a call or ``--max-steps`` is reached. The base URL may carry the session token
(``http://gateway/sessions/<token>/v1``, what a trainer hands each trial), so no key is needed.

    python3 mini_swe_agent.py --base-url "$BASE_URL" --task "Create hello.txt saying hello"
"""

import argparse
import json
import subprocess
import sys
import urllib.request

BASH = {
    "type": "function",
    "function": {
        "name": "bash",
        "description": "Run a bash command in the repository and see its output.",
        "parameters": {
            "type": "object",
            "properties": {"command": {"type": "string"}},
            "required": ["command"],
        },
    },
}

SYSTEM = "You are a software engineer. Use the bash tool to inspect and change the repository."


def complete(base_url: str, api_key: str, model: str, messages: list) -> dict:
    """One Chat Completions request; returns the assistant message."""
    body = json.dumps({"model": model, "messages": messages, "tools": [BASH]}).encode("utf-8")
    request = urllib.request.Request(
        base_url.rstrip("/") + "/chat/completions",
        data=body,
        headers={"Content-Type": "application/json", "Authorization": f"Bearer {api_key}"},
        method="POST",
    )
    with urllib.request.urlopen(request, timeout=600) as response:
        return json.loads(response.read())["choices"][0]["message"]


def run(command: str, cwd: str) -> str:
    """Runs one command; its return code and output, as mini-swe-agent shows them."""
    done = subprocess.run(
        ["bash", "-c", command], cwd=cwd, capture_output=True, text=True, timeout=120
    )
    return f"<returncode>{done.returncode}</returncode>\n<output>\n{done.stdout}{done.stderr}</output>"


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("--base-url", required=True)
    parser.add_argument("--api-key", default="unused")
    parser.add_argument("--model", default="qwen3")
    parser.add_argument("--task", required=True)
    parser.add_argument("--cwd", default=".")
    parser.add_argument("--max-steps", type=int, default=20)
    args = parser.parse_args()
    messages = [{"role": "system", "content": SYSTEM}, {"role": "user", "content": args.task}]
    for _ in range(args.max_steps):
        reply = complete(args.base_url, args.api_key, args.model, messages)
        # Echoed as agents do: content and tool calls, the reasoning left out.
        messages.append({
            "role": "assistant",
            "content": reply.get("content"),
            **({"tool_calls": reply["tool_calls"]} if reply.get("tool_calls") else {}),
        })
        if not reply.get("tool_calls"):
            print(reply.get("content") or "")
            return 0
        for call in reply["tool_calls"]:
            command = json.loads(call["function"]["arguments"]).get("command", "")
            messages.append({"role": "tool", "tool_call_id": call["id"], "content": run(command, args.cwd)})
    print("step limit reached", file=sys.stderr)
    return 2


if __name__ == "__main__":
    sys.exit(main())
