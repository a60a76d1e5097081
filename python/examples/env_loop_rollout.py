"""slime's tau-bench rollout with the gateway running the agent loop, Python standard library only.

What slime's ``examples/tau-bench`` generate function does per task — reset the environment,
let the model call its tools and talk to the user until the episode ends, take the
environment's reward — is the gateway's ``env_loop`` harness here: each task index becomes a
group of ``n`` episodes, and the trainer gets slime samples back, token-exact (nothing is
re-tokenized), each with its status (``COMPLETED``, ``TRUNCATED``, ``ABORTED``) and reward.

    GATEWAY_URL=http://127.0.0.1:8080 ADMIN_TOKEN=... \\
      python3 env_loop_rollout.py --env http://127.0.0.1:8090 --tasks 0 1 --n 4 --max-steps 30

The environment speaks ``POST /reset`` and ``POST /step`` (see "Tool environments" in
docs/rollouts.md); ``fixtures/retail_env.ts`` is a small one to try it with.
"""

import argparse
import json
import os
import sys

sys.path.insert(0, os.path.join(os.path.dirname(__file__), ".."))
from rollout_gateway import Gateway  # noqa: E402


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("--env", required=True, help="the environment's base URL")
    parser.add_argument("--tasks", type=int, nargs="+", required=True, help="task indexes")
    parser.add_argument("--n", type=int, default=1, help="episodes per task")
    parser.add_argument("--max-steps", type=int, default=30)
    parser.add_argument("--user", choices=["env", "model"], default="env",
                        help="who answers the agent: the environment's user, or a model here")
    args = parser.parse_args()
    gw = Gateway(os.environ["GATEWAY_URL"], admin_token=os.environ["ADMIN_TOKEN"])

    groups = {
        index: gw.submit_rollout(
            {"environment": args.env, "task_index": index},
            n=args.n,
            agent={"harness": "env_loop", "max_steps": args.max_steps, "user": args.user},
            metadata={"task_index": index},
        )
        for index in args.tasks
    }
    results = []
    for index, group in groups.items():
        for view in gw.wait_rollout(group, poll=0.2, progress=None):
            result = view.get("result") or {}
            reward = result.get("reward") or {}
            agent = result.get("agent") or {}
            samples = []
            if view["phase"] == "done":
                samples = gw.rollout(view["id"], format="slime")["result"]["samples"]["samples"]
            results.append({
                "task_index": index,
                "job": view["id"],
                "session_id": view["session_id"],
                "phase": view["phase"],
                # slime's Sample.Status: how the episode ended, whatever the job's phase
                "status": agent.get("result"),
                "reward": reward.get("score"),
                "steps": reward.get("steps"),
                "samples": samples,
            })
    print(json.dumps(results))
    return 0


if __name__ == "__main__":
    sys.exit(main())
