"""A client of the Rollout Gateway's trainer API, Python 3.9+ standard library only.

The trainer opens one session per episode, hands the session token to the agent as its API key
(or a base URL carrying it), scores the episode, closes the session and reads the recorded tokens
back::

    from rollout_gateway import Gateway

    gw = Gateway("http://127.0.0.1:8080", admin_token=os.environ["ADMIN_TOKEN"])
    session = gw.open_session(metadata={"task": "astropy-1234"})
    run_agent(base_url=gw.base_url, api_key=session.token)  # /v1/messages or /v1/chat/completions
    gw.set_reward(session.id, 1.0, tests_passed=12)  # evidence is kept beside the score
    gw.close_session(session.id)  # later turns with the token get 409
    for sample in gw.samples(session.id, format="slime"):  # one sample per chain
        # tokens = prompt + response; loss_mask and rollout_log_probs cover the response
        buffer.append(sample)  # with reward (the score) and status (completed/truncated)
"""

import array
import ast
import hashlib
import http.client
import json
import math
import sys
import time
import urllib.error
import urllib.parse
import urllib.request
from dataclasses import dataclass, field
from typing import Any, Dict, Iterable, Iterator, List, Mapping, Optional, Tuple, Union

__all__ = [
    "Gateway", "Session", "GatewayError", "GatewayConnectionError", "InvalidRequestError",
    "AuthenticationError", "PermissionDeniedError", "NotFoundError", "ConflictError",
    "RequestTooLargeError", "OverloadedError", "UnavailableError", "RolloutGroup", "SampleList",
    "JobList", "RoutedExperts", "FINAL_PHASES", "PackedTree", "flatten_tree", "pack_tree",
    "tree_path",
]

#: Phases a rollout job never leaves.
FINAL_PHASES = frozenset({"done", "failed", "aborted"})


class GatewayError(Exception):
    """The gateway answered with an error status, or could not be reached.

    ``status`` is the HTTP status (0 when no answer arrived); ``type`` is the error type of the
    gateway's envelope (``"not_found_error"``, ...), or ``None`` when the body was not one;
    ``message`` is the gateway's explanation; ``request_id`` is the ``req_...`` id to quote
    when reading the gateway's logs, or ``None``.
    """

    def __init__(
        self,
        status: int,
        type: Optional[str],
        message: str,
        request_id: Optional[str] = None,
    ) -> None:
        super().__init__(f"{status} {type or 'error'}: {message}")
        self.status = status
        self.type = type
        self.message = message
        self.request_id = request_id


class GatewayConnectionError(GatewayError):
    """No HTTP answer: the connection was refused, dropped or timed out (``status`` is 0)."""


class InvalidRequestError(GatewayError):
    """400: the body, query or id was not valid; ``message`` names the path at fault."""


class AuthenticationError(GatewayError):
    """401: the admin token is missing or wrong."""


class PermissionDeniedError(GatewayError):
    """403: a session token was used on the trainer API, which needs the admin token."""


class NotFoundError(GatewayError):
    """404: no session has this id, or it was deleted or expired after closing."""


class ConflictError(GatewayError):
    """409: a session with this id already exists (or, for agents, the session is closed)."""


class RequestTooLargeError(GatewayError):
    """413: the body is larger than the gateway's ``MAX_BODY_BYTES``."""


class OverloadedError(GatewayError):
    """529: the gateway is busy (e.g. a turn holds the session); retry after ``retry_after``.

    ``retry_after`` is the wait the gateway suggests, in seconds, or ``None`` if it gave none.
    """

    def __init__(self, *args: Any, retry_after: Optional[float] = None) -> None:
        super().__init__(*args)
        self.retry_after = retry_after


class TaskInvalidError(GatewayError):
    """422: a rollout asked to validate its task first (``validate``), and the task is not valid:
    ``message`` names its problems and flaky tests; nothing was queued."""


class UnavailableError(GatewayError):
    """503: the gateway cannot make sandboxes (bubblewrap missing, E2B unreachable), or some
    engine workers refused a pause, continue or weight-version call."""


_ERRORS = {
    400: InvalidRequestError,
    401: AuthenticationError,
    403: PermissionDeniedError,
    404: NotFoundError,
    409: ConflictError,
    413: RequestTooLargeError,
    422: TaskInvalidError,
    503: UnavailableError,
    529: OverloadedError,
}


@dataclass(frozen=True)
class Session:
    """A freshly opened session.

    ``id`` names it in every trainer call; ``token`` is the agent's API key (``<id>.<secret>``,
    shown only once: the gateway keeps its digest); ``created_at`` is an ISO 8601 UTC time.
    """

    id: str
    token: str = field(repr=False)
    created_at: str


@dataclass(frozen=True)
class RolloutGroup:
    """A submitted rollout group: ``group_id`` and its job ids, in order."""

    group_id: str
    job_ids: List[str]


class SampleList(List[Dict[str, Any]]):
    """An export's samples (or records), in order: a plain list of dicts, which also carries
    ``dropped``, the segments the export left out, each ``{"chain_id", "kind", "reason"}``: a
    side segment without ``include_side``, one over ``max_segments``, one past
    ``max_segment_tokens`` with ``overlong="drop"``, a stale one with ``stale="drop"``.

    ``dropped`` is the same list in every format but ``"jsonl"``, whose lines carry no such
    field: there it is ``None`` (ask another format for it)::

        samples = gw.samples(session.id, format="slime", max_segments=8)
        for segment in samples.dropped:
            log.warning("%s left out: %s", segment["chain_id"], segment["reason"])
    """

    def __init__(
        self,
        items: Iterable[Dict[str, Any]] = (),
        dropped: Optional[List[Dict[str, Any]]] = None,
        partial: bool = False,
    ) -> None:
        super().__init__(items)
        self.dropped = dropped
        #: A group's export (:meth:`Gateway.group_samples`): some job had not ended yet.
        self.partial = partial


class JobList(List[Dict[str, Any]]):
    """A rollout group's job views, in job order: a plain list of dicts, which also carries the
    group's outcome as the gateway reports it: ``group_id``; ``complete``, true when every job
    ended with the agent's outcome (the group came back whole); ``agent_jobs``, how many did; and
    ``infra_jobs``, the ids of those the infrastructure failed after their attempts (they have no
    reward: drop a group that is not complete, or renormalize over its agent jobs)::

        views = gw.wait_rollout(group)
        if not views.complete:
            log.warning("%s: infrastructure failed %s", views.group_id, views.infra_jobs)
    """

    def __init__(
        self,
        items: Iterable[Dict[str, Any]] = (),
        group_id: str = "",
        complete: bool = False,
        agent_jobs: int = 0,
        infra_jobs: Optional[List[str]] = None,
    ) -> None:
        super().__init__(items)
        self.group_id = group_id
        self.complete = complete
        self.agent_jobs = agent_jobs
        self.infra_jobs = list(infra_jobs or [])


@dataclass(frozen=True)
class RoutedExperts:
    """A sample's routed experts (R3), as the gateway serves them (a ``.npy`` file).

    ``shape`` is ``(rows, layers, top_k)`` — ``len(tokens) - 1`` rows in slime's layout, one a
    token in verl's — ``dtype`` is numpy's name of the element type (``"int16"``, or ``"int32"``
    for a model of more than 32,767 experts), and ``data`` the rows' bytes, little-endian, C order;
    ``-1`` marks a position no engine forwarded. With numpy:
    ``np.frombuffer(r.data, dtype=r.dtype).reshape(r.shape)``; without, ``r.values()``.
    """

    shape: Tuple[int, ...]
    dtype: str
    data: bytes

    def values(self) -> "array.array[int]":
        """The expert ids as a flat ``array.array``, row by row."""
        values = array.array({"int16": "h", "int32": "i"}[self.dtype])
        values.frombytes(self.data)
        if sys.byteorder != "little":
            values.byteswap()
        return values


_NPY_TYPES = {"<i2": "int16", "<i4": "int32"}


def _read_npy(data: bytes) -> RoutedExperts:
    """A ``.npy`` file (format 1, 2 or 3) of int16 or int32 in C order."""
    if data[:6] != b"\x93NUMPY":
        raise ValueError("routed experts did not come back as a .npy file")
    if data[6] == 1:
        length, start = int.from_bytes(data[8:10], "little"), 10
    else:
        length, start = int.from_bytes(data[8:12], "little"), 12
    header = ast.literal_eval(data[start:start + length].decode("latin-1"))
    dtype = _NPY_TYPES.get(header.get("descr"))
    if dtype is None or header.get("fortran_order"):
        raise ValueError(f"routed experts of an unexpected .npy type {header.get('descr')!r}")
    shape = tuple(int(dim) for dim in header["shape"])
    body = data[start + length:]
    size = 2 if dtype == "int16" else 4
    count = math.prod(shape)
    if len(body) != count * size:
        raise ValueError(f"routed experts hold {len(body)} bytes, not {count} x {size}")
    return RoutedExperts(shape=shape, dtype=dtype, data=body)


class Gateway:
    """The trainer API of one gateway, authenticated with its admin token.

    Every method raises a :class:`GatewayError` subclass when the gateway answers with an error,
    and :class:`GatewayConnectionError` when it cannot be reached within ``timeout`` seconds.
    """

    def __init__(self, base_url: str, admin_token: str, timeout: float = 60.0) -> None:
        self.base_url = base_url.rstrip("/")
        self.timeout = timeout
        self._admin_token = admin_token

    def __repr__(self) -> str:
        return f"Gateway({self.base_url!r})"

    def open_session(
        self,
        id: Optional[str] = None,
        metadata: Optional[Mapping[str, Any]] = None,
        record_messages: bool = False,
        reward_allocation: Optional[str] = None,
    ) -> Session:
        """Opens a session for one episode. Without ``id`` the gateway generates ``sess_<hex>``;
        ``metadata`` is any JSON object, kept with the session and filterable in listings.
        With ``record_messages`` each turn also keeps what its request added, as canonical
        chat messages (see :meth:`record`). ``reward_allocation`` says how the session's score is
        shared among its segments in every export: ``"uniform"`` (score / K each), ``"copy"``
        (the score each) or ``"final_only"`` (all to the final segment); unset, the gateway's
        ``REWARD_ALLOCATION``. An export's own ``reward_allocation`` option overrides it.

        Raises :class:`ConflictError` when ``id`` is taken, :class:`InvalidRequestError` when it
        is not letters, digits, ``_`` and ``-`` (up to 128 characters) or ``reward_allocation``
        is none of those, and ValueError, naming the key, for a NaN or infinity in ``metadata``.
        """
        body: Dict[str, Any] = {}
        if id is not None:
            body["id"] = id
        if metadata is not None:
            body["metadata"] = dict(metadata)
        if reward_allocation is not None:
            body["reward_allocation"] = reward_allocation
        if record_messages:
            body["record_messages"] = True
        opened = self._json("POST", "/sessions", body=body)
        return Session(id=opened["id"], token=opened["token"], created_at=opened["created_at"])

    def agent_base_url(self, token: str, protocol: str = "openai") -> str:
        """The base URL an agent uses with ``token`` in its path, for agents that cannot set
        headers or a trainer that hands each trial its own URL (any API key then works).

        ``protocol`` is ``"openai"`` (``.../sessions/<token>/v1``, for OpenAI SDKs and LiteLLM,
        which append ``/chat/completions``) or ``"anthropic"`` (``.../sessions/<token>``, for
        Anthropic SDKs and Claude Code, which append ``/v1/messages``).
        """
        if protocol not in ("openai", "anthropic"):
            raise ValueError(f"protocol must be 'openai' or 'anthropic', not {protocol!r}")
        root = f"{self.base_url}/sessions/{_quote(token)}"
        return root + "/v1" if protocol == "openai" else root

    def record(self, id: str, format: str = "verl", turns: bool = True) -> Dict[str, Any]:
        """Everything a trainer reads about a finished episode: ``session`` (the view of
        :meth:`get_session`, with its chains and reward), ``samples`` (one per chain, in
        ``format``, see :meth:`samples`: token ids, loss mask and the engine's logprobs) and,
        with ``turns``, ``chains``: every chain's turns as recorded (the raw export), each with
        ``tokens`` (``delta``: what its request added, ``output``: what the engine sampled,
        ``logprobs``, ``closing``) and, in a session opened with ``record_messages``,
        ``request``: ``messages`` (what its request added, as canonical chat messages: the
        whole conversation on a chain's first turn) and, on a first turn, ``tools``. A chain's
        turns' ``request`` messages, each followed by its reply, make up the conversation.
        """
        out = {"session": self.get_session(id), "samples": self.samples(id, format=format)}
        if turns:
            out["chains"] = self.samples(id, format="raw")["chains"]  # type: ignore[index]
        return out

    def get_session(self, id: str) -> Dict[str, Any]:
        """The session's view: ``status`` (``"open"``/``"closed"``), ``created_at``,
        ``closed_at`` and ``expires_at`` (ISO 8601 or ``None``; a closed session is deleted at
        ``expires_at``), ``closed_as`` (``"completed"``, ``"aborted"`` for a rollout's session
        cut short, or ``None`` while open), ``metadata``, ``reward`` (the last payload set, or ``None``), and
        ``chains``: ``{id, kind, turns, tokens}`` in the order they started, ``kind`` being
        ``"final"`` for the current conversation and ``"wipe"`` for one a later request replaced.
        """
        return self._json("GET", f"/sessions/{_quote(id)}")

    def list_sessions(
        self,
        status: Optional[str] = None,
        metadata: Optional[Mapping[str, Any]] = None,
        page_size: int = 100,
        reward_min: Optional[float] = None,
        reward_max: Optional[float] = None,
    ) -> Iterator[Dict[str, Any]]:
        """Every session matching the filter, in id order, as views (see :meth:`get_session`).

        ``status`` is ``"open"`` or ``"closed"``; ``metadata`` keeps sessions whose metadata has
        each key with an equal value (compared as strings, ``True`` as ``"true"``);
        ``reward_min`` and ``reward_max`` keep sessions whose reward's score is at least, at
        most, that finite number (bounds included; a session with no reward is left out). Pages
        of up to ``page_size`` (1 to 1000) sessions are fetched as the iterator is consumed.
        A bound that is not a finite number raises ValueError, naming it, before any request.
        """
        query: Dict[str, str] = {"limit": str(page_size)}
        if status is not None:
            query["status"] = status
        for name, bound in (("reward_min", reward_min), ("reward_max", reward_max)):
            if bound is not None:
                query[name] = _finite_bound(name, bound)
        for key, value in (metadata or {}).items():
            query[f"metadata.{key}"] = _query_value(value)
        while True:
            page = self._json("GET", "/sessions?" + urllib.parse.urlencode(query))
            yield from page["sessions"]
            if page.get("next_cursor") is None:
                return
            query["cursor"] = page["next_cursor"]

    def set_reward(self, id: str, score: float, **evidence: Any) -> Dict[str, Any]:
        """Scores the episode; returns the session's view. ``score`` is the finite number every
        exported sample carries as its reward; ``evidence`` (any JSON values, e.g. test results)
        is kept beside it in the ``reward`` payload. Setting it again replaces it. A score that is
        not a number is refused (:class:`InvalidRequestError`, naming ``score``). NaN or infinity,
        in ``score`` or anywhere in ``evidence``, raises ValueError naming where it is
        (``score``, ``tests.durations[2]``) before anything is sent: JSON has no such numbers (an
        integer too large for a double is refused by the gateway, naming it likewise).
        """
        body = {**evidence, "score": score}
        return self._json("POST", f"/sessions/{_quote(id)}/reward", body=body)

    def close_session(self, id: str) -> Dict[str, Any]:
        """Freezes the session once a turn in flight has finished; returns its view. The agent's
        token is refused from then on (409) and the session is deleted at ``expires_at``.
        Closing a closed session changes nothing.
        """
        return self._json("POST", f"/sessions/{_quote(id)}/close")

    def delete_session(self, id: str) -> None:
        """Deletes the session and everything recorded in it."""
        self._request("DELETE", f"/sessions/{_quote(id)}")

    def samples(
        self, id: str, format: str = "samples", **options: Any
    ) -> Union[SampleList, Dict[str, Any]]:
        """The session's recorded chains as training samples, one per trainable segment, as a
        :class:`SampleList`: a list, whose ``dropped`` names the segments the export left out.

        ``format`` is ``"samples"`` (``prompt_ids``, ``response_ids``, ``loss_mask``,
        ``logprobs``, ``version_spans``, ``turns``), ``"slime"`` (slime's ``Sample``),
        ``"verl"`` (verl's ``AgentLoopOutput``), ``"jsonl"`` (xtuner-style records, parsed line
        by line), ``"xtuner"`` (xtuner's trajectory records: ``status``, ``finish_reason``,
        ``prompt_len``, ``response_len``, ``raw_prompt``, ``reward`` ``{score, ...metrics}``,
        ``agent`` ``{messages, tools, tool_names, tool_turns}`` whose ``messages`` carry
        ``token_ids`` that join up to ``prompt_ids + response_ids``, and the arrays) or
        ``"raw"`` (a dict ``{session, chains}`` of every turn ever recorded, for audits, its keys
        snake_case: ``input_len``, ``finish_reason``, ``body_digest``, …). A mask
        value of 1 marks a token the engine sampled and is trained on; 0 marks tool output,
        template tokens and turns masked by policy. ``options`` are the export's other query
        parameters: ``reward_allocation``, ``include_side``, ``max_segments``, ``max_segment_tokens``,
        ``overlong``, ``max_staleness``, ``current_version``, ``stale``.
        """
        params = {"format": format}
        params.update({key: _query_value(value) for key, value in options.items()})
        query = urllib.parse.urlencode(params)
        text = self._request("GET", f"/sessions/{_quote(id)}/samples?{query}").decode("utf-8")
        if format == "jsonl":  # one record a line, and no ``dropped``
            return SampleList(json.loads(line) for line in text.splitlines() if line.strip())
        parsed = json.loads(text)
        if format == "raw":
            return parsed
        return SampleList(_exported_list(parsed), dropped=parsed.get("dropped"))

    def image(self, id: str, digest: str) -> bytes:
        """The bytes of an image a sample names (its ``images[].digest``, or the ``url`` itself).

        A vision model's samples list their images with the span of their pad tokens; this
        fetches one from the gateway and checks it against its SHA-256 ``digest``.
        """
        digest = digest.rsplit("/", 1)[-1]
        data = self._request("GET", f"/sessions/{_quote(id)}/images/{_quote(digest)}")
        if hashlib.sha256(data).hexdigest() != digest:
            raise ValueError(f"image {digest} came back with other bytes")
        return data

    def routed_experts(self, sample: Mapping[str, Any], layout: str = "slime") -> RoutedExperts:
        """The routed experts a sample names (R3; ``ROUTED_EXPERTS=true``), fetched as a ``.npy``.

        ``sample`` is any export's sample (its ``routed_experts``, or slime's
        ``rollout_routed_experts``); ``layout`` is ``"slime"`` (``len(tokens) - 1`` rows, as
        ``Sample.rollout_routed_experts`` wants them) or ``"verl"`` (a row a token, the last -1).
        The shape is checked against the one the sample says.
        """
        named = sample.get("routed_experts") or sample.get("rollout_routed_experts")
        if not named:
            raise ValueError("the sample names no routed experts (is ROUTED_EXPERTS on?)")
        url = named["url"].split("?", 1)[0]
        query = "?layout=verl" if layout == "verl" else ""
        routes = _read_npy(self._request("GET", url + query))
        # verl's layout has one row more than slime's: the last token's, never forwarded.
        rows = named["shape"][0] + (layout == "verl") - (named.get("layout") == "verl")
        if routes.shape != (rows, *named["shape"][1:]):
            raise ValueError(f"routed experts came back as {routes.shape}, not {named['shape']}")
        return routes

    def pause_engine(self, mode: str = "abort") -> Dict[str, Any]:
        """Pauses generation on every engine worker: ``abort``, ``retract`` or ``in_place`` on
        SGLang; ``abort``, ``wait`` or ``keep`` on vLLM.

        Turns in flight are not lost: they go on after :meth:`continue_engine`, each token
        keeping the weight version that sampled it.
        """
        return self._json("POST", "/engine/pause", {"mode": mode})

    def continue_engine(self) -> Dict[str, Any]:
        """Continues generation on every engine worker."""
        return self._json("POST", "/engine/continue", {})

    def set_weight_version(self, version: str, abort_all_requests: bool = False) -> Dict[str, Any]:
        """Names the weights every engine worker serves from now on (an integer string)."""
        body = {"version": str(version), "abort_all_requests": abort_all_requests}
        return self._json("POST", "/engine/weight_version", body)

    def weight_versions(self) -> List[Dict[str, str]]:
        """Each engine worker's weight version: ``[{"url", "version"}]``."""
        return self._json("GET", "/engine/weight_version")["workers"]

    def evaluate(
        self, task: Mapping[str, Any], patch: str, timeout: Optional[float] = None
    ) -> Dict[str, Any]:
        """Grades ``patch`` (a unified diff, ``""`` for none) against ``task`` in a fresh sandbox.

        ``task`` is at least ``{"repo", "base_commit", "eval_cmd"}`` (or ``f2p_script``, or
        ``fail_to_pass``/``pass_to_pass`` with a ``runner``). Returns the reward payload:
        ``score``, ``applied_cleanly``, ``reason``, ``tests`` (``passed``/``failed``),
        ``exit_code``, ``duration_ms``, ``log_tail`` and more; pass it to :meth:`set_reward`
        as ``set_reward(id, **result)``. ``timeout`` (seconds, default the client's) should
        exceed the task's own time limit: evaluations wait for a free slot and run the tests.
        """
        body = {"task": dict(task), "patch": patch}
        text = self._request("POST", "/evaluate", body=body, timeout=timeout)
        return json.loads(text.decode("utf-8"))

    def validate_task(
        self,
        task: Mapping[str, Any],
        gold_patch: Optional[str] = None,
        timeout: Optional[float] = None,
    ) -> Dict[str, Any]:
        """Proves ``task`` (the spec of :meth:`evaluate`, or ``{"harbor": "/abs/dir"}``) before
        rollouts are spent on it: its tests run twice at the base commit, where they must run and
        fail as the task says, and twice with ``gold_patch`` (a Harbor folder's
        ``solution/solve.sh`` when not given), where they must pass. Returns ``valid``,
        ``problems`` (in words), ``flaky`` (tests whose outcome changed between two runs),
        the runs (``base``, ``gold``), ``digest``, ``checked_at`` and ``cached`` (the verdict
        was kept from an earlier ask). ``timeout`` should cover four runs of the tests.
        """
        body: Dict[str, Any] = {"task": dict(task)}
        if gold_patch is not None:
            body["gold_patch"] = gold_patch
        text = self._request("POST", "/evaluate/validate", body=body, timeout=timeout)
        return json.loads(text.decode("utf-8"))

    def submit_rollout(
        self,
        task: Mapping[str, Any],
        n: int = 1,
        *,
        agent: Optional[Mapping[str, Any]] = None,
        sandbox: Optional[Mapping[str, Any]] = None,
        budgets: Optional[Mapping[str, Any]] = None,
        reward_allocation: Optional[str] = None,
        max_attempts: Optional[int] = None,
        metadata: Optional[Mapping[str, Any]] = None,
        reward_mode: Optional[str] = None,
        retry_budget: Optional[int] = None,
        retry_backoff_ms: Optional[int] = None,
        validate: Union[bool, str] = False,
    ) -> RolloutGroup:
        """Queues ``n`` episodes of ``task`` (the same spec as :meth:`evaluate`, with a
        ``problem_statement``; a Harbor task folder ``{"harbor": "/abs/dir"}``; or, with
        ``agent={"harness": "env_loop"}``, a tool environment ``{"environment": url,
        "task_index": i}``) with the current policy; returns their ids at once.

        ``agent`` (``prompt_template``, ``permission_mode``, ``disallowed_tools``,
        ``max_turns``, ``auto_compact_window``, ``model``, ``env``), ``sandbox`` (``backend``,
        ``template``), ``budgets`` (``agent_ms``, ``eval_ms``, ``margin_ms``,
        ``on_agent_timeout``, ``boot_ms``, ``job_ms``), ``reward_allocation`` (``"uniform"``, ``"copy"``,
        ``"final_only"``; ``reward_mode`` is its old name, still taken) and ``metadata`` (kept on
        every job's session) default to the gateway's settings. ``max_attempts`` (3),
        ``retry_budget`` (``n``) and ``retry_backoff_ms`` (1000) say how jobs the infrastructure
        fails are tried again (docs/rollouts.md, "Whose failure"). ``validate`` (``True``, or
        the task's gold patch) proves the task first, as :meth:`validate_task` does (a kept
        verdict is used): an invalid task raises :class:`TaskInvalidError` and queues nothing.
        """
        body: Dict[str, Any] = {"task": dict(task), "n": n}
        if validate is True or isinstance(validate, str):
            body["validate"] = True if validate is True else {"gold_patch": validate}
        for name, value in (
            ("agent", agent), ("sandbox", sandbox), ("budgets", budgets),
            ("reward_allocation", _one_allocation(reward_allocation, reward_mode)),
            ("max_attempts", max_attempts), ("metadata", metadata),
            ("retry_budget", retry_budget), ("retry_backoff_ms", retry_backoff_ms),
        ):
            if value is not None:
                body[name] = dict(value) if isinstance(value, Mapping) else value
        answer = self._json("POST", "/rollout", body=body)
        return RolloutGroup(answer["group_id"], [job["id"] for job in answer["jobs"]])

    def rollout(self, job_id: str, format: str = "samples") -> Dict[str, Any]:
        """A job's view: ``phase`` (``queued``, ``booting``, ``agent``, ``evaluating``,
        ``done``, ``failed``, ``aborted``), ``reason`` and ``detail`` when it did not finish,
        ``progress`` (``turns``, ``tokens``, ``elapsed_ms``), ``session_id``, and ``result``:
        ``reward`` (the evaluation's payload), ``patch``, ``agent`` (``exit_code``,
        ``num_turns``, ``log_tail``…) and, once done, ``samples`` in ``format`` (as
        :meth:`samples`: a dict with ``samples``, or ``records`` for ``"jsonl"`` and
        ``"xtuner"``).
        """
        query = urllib.parse.urlencode({"format": format})
        return self._json("GET", f"/rollout/{_quote(job_id)}?{query}")

    def rollout_group(self, group_id: str) -> JobList:
        """The views of a group's jobs (without samples), in job order, as a :class:`JobList`:
        a list, whose ``complete``, ``agent_jobs`` and ``infra_jobs`` say whether the group came
        back whole (once every job has finished; until then ``complete`` is false)."""
        query = urllib.parse.urlencode({"group_id": group_id})
        answer = self._json("GET", f"/rollout?{query}")
        return JobList(
            answer["jobs"],
            group_id=answer.get("group_id", group_id),
            complete=answer.get("complete", False),
            agent_jobs=answer.get("agent_jobs", 0),
            infra_jobs=answer.get("infra_jobs"),
        )

    def cancel_rollout(self, job_id: str) -> Dict[str, Any]:
        """Cancels a job: its agent is stopped, its sandbox killed and its session closed as
        aborted. Returns the job's view (``phase`` ``"aborted"``, ``reason`` ``"cancelled"``
        once stopped; a finished job is left as it was)."""
        return self._json("DELETE", f"/rollout/{_quote(job_id)}")

    def wait_rollout(
        self,
        group: RolloutGroup,
        poll: float = 2.0,
        timeout: Optional[float] = None,
        progress: Optional[Any] = sys.stderr,
        min_complete: Optional[int] = None,
    ) -> JobList:
        """Waits until every job of ``group`` has finished; returns their views, in job order, as
        a :class:`JobList` (``complete``, ``agent_jobs``, ``infra_jobs``: the group's outcome).

        Each finished job says whose its end was: ``outcome`` ``"agent"`` (the episode ran; its
        reward is real, 0 included) or ``"infra"`` (the infrastructure failed it after its
        attempts; it has no reward). With ``min_complete=k``, it returns as soon as ``k`` jobs
        have the agent's outcome, for a trainer that over-provisions: take those
        (``view["outcome"] == "agent"``) and cancel or ignore the rest.

        Every ``poll`` seconds it reads the group and, when anything changed, writes one line to
        ``progress`` (a text stream; ``None`` for silence)::

            grp_1a2b…: 3/4 finished (done 3) · agent 1 · 57 turns · 412k tokens · 95 s

        Raises TimeoutError after ``timeout`` seconds.
        """
        started = time.monotonic()
        last = ""
        while True:
            views = self.rollout_group(group.group_id)
            line = _progress_line(group.group_id, views, time.monotonic() - started)
            if progress is not None and line.split(" · ")[:-1] != last.split(" · ")[:-1]:
                print(line, file=progress, flush=True)
                last = line
            if all(view["phase"] in FINAL_PHASES for view in views):
                return views
            agent = sum(1 for view in views if view.get("outcome") == "agent")
            if min_complete is not None and agent >= min_complete:
                return views
            if timeout is not None and time.monotonic() - started > timeout:
                raise TimeoutError(f"Rollout group {group.group_id} unfinished: {line}")
            time.sleep(poll)

    def rollout_samples(
        self, group: RolloutGroup, format: str = "slime"
    ) -> List[Dict[str, Any]]:
        """The training samples of every finished (``done``) job of ``group``, in job order,
        in ``format`` (``"slime"``, ``"verl"``, ``"samples"``, or ``"jsonl"`` or ``"xtuner"``
        records); each carries its share of the job's reward. Jobs that failed or were aborted
        have none: those of the agent's outcome that ended without a reward (an agent past its
        budget), and those the infrastructure failed (``outcome: "infra"``), which never have
        a reward, so a trainer drops their group or renormalizes over the rest.
        """
        out: List[Dict[str, Any]] = []
        for job_id in group.job_ids:
            view = self.rollout(job_id, format=format)
            result = view.get("result") or {}
            exported = result.get("samples")
            if view["phase"] != "done" or not exported:
                continue
            out.extend(_exported_list(exported))
        return out

    def group_samples(
        self, group: Union[RolloutGroup, str], format: str = "samples", limit: int = 16,
        **options: Any,
    ) -> SampleList:
        """Every done job's samples of ``group`` in one list, in job order, read a page of
        ``limit`` jobs at a time from ``GET /rollout/groups/:group_id/samples`` (``format`` and
        ``options`` as :meth:`samples` takes them, ``"jsonl"`` records as dicts; not ``"raw"``
        nor ``"tree"``: see :meth:`group_tree`). Its ``dropped`` names each segment left out with
        its ``session_id``; ``partial`` is true when some job had not ended yet.
        """
        if format in ("raw", "tree"):
            raise ValueError(f"group_samples() exports lists of samples; for {format!r} read pages")
        dropped: List[Dict[str, Any]] = []
        out = SampleList(dropped=dropped)
        cursor: Optional[str] = None
        while True:
            page = self.group_page(group, format=format, cursor=cursor, limit=limit, **options)
            out.extend(page.get("samples") or page.get("records") or [])
            dropped.extend(page.get("dropped") or [])
            out.partial = out.partial or page["partial"]
            cursor = page.get("next_cursor")
            if cursor is None:
                return out

    def group_tree(
        self, group: Union[RolloutGroup, str], cursor: Optional[str] = None, limit: int = 16,
        **options: Any,
    ) -> Dict[str, Any]:
        """One page of ``group``'s samples as a prefix tree (``format=tree``): a dict of
        ``nodes`` (depth-first, each ``{"id", "parent", "position", "tokens", "loss_mask",
        "logprobs", "version_spans"}`` and, where they start in it, ``images`` and
        ``routed_experts``), ``leaves`` (one a sample: ``node``, ``prompt_len`` and the sample's
        other fields), ``stats`` (``tree_tokens`` against ``flat_tokens``), ``partial``, and
        ``next_cursor`` for the page after (``None`` at the last). :func:`flatten_tree` gives
        the flat samples back; :func:`pack_tree` one sequence to train on.
        """
        return self.group_page(group, format="tree", cursor=cursor, limit=limit, **options)

    def group_page(
        self, group: Union[RolloutGroup, str], format: str = "samples",
        cursor: Optional[str] = None, limit: int = 16, **options: Any,
    ) -> Dict[str, Any]:
        """One page of ``GET /rollout/groups/:group_id/samples``, as the gateway answers it."""
        group_id = group.group_id if isinstance(group, RolloutGroup) else group
        params: Dict[str, str] = {"format": format, "limit": str(limit)}
        if cursor is not None:
            params["cursor"] = cursor
        params.update({key: _query_value(value) for key, value in options.items()})
        query = urllib.parse.urlencode(params)
        return self._json("GET", f"/rollout/groups/{_quote(group_id)}/samples?{query}")

    def _json(self, method: str, path: str, body: Optional[Any] = None) -> Dict[str, Any]:
        return json.loads(self._request(method, path, body).decode("utf-8"))

    def _request(
        self, method: str, path: str, body: Optional[Any] = None, timeout: Optional[float] = None
    ) -> bytes:
        """Sends one request; returns the body of a 2xx answer, raises for anything else."""
        headers = {
            "Authorization": f"Bearer {self._admin_token}",
            "Accept": "application/json",
            "User-Agent": "rollout-gateway-python/1",
        }
        data = None
        if body is not None:
            _check_finite(body)
            data = json.dumps(body, allow_nan=False).encode("utf-8")
            headers["Content-Type"] = "application/json"
        request = urllib.request.Request(
            self.base_url + path, data=data, headers=headers, method=method
        )
        try:
            wait = self.timeout if timeout is None else timeout
            with urllib.request.urlopen(request, timeout=wait) as response:
                return response.read()
        except urllib.error.HTTPError as error:
            with error:
                raise _error_from(error.code, error.headers, error.read()) from None
        except (urllib.error.URLError, http.client.HTTPException, OSError) as error:
            reason = getattr(error, "reason", error)
            raise GatewayConnectionError(
                0, None, f"Cannot reach {self.base_url}: {reason}"
            ) from error


def tree_path(tree: Mapping[str, Any], node: int) -> List[Dict[str, Any]]:
    """The nodes of ``tree`` from a root down to ``node``, in order."""
    nodes = tree["nodes"]
    path: List[Dict[str, Any]] = []
    at: Optional[int] = node
    while at is not None:
        path.append(nodes[at])
        at = nodes[at]["parent"]
    path.reverse()
    return path


def flatten_tree(tree: Mapping[str, Any]) -> List[Dict[str, Any]]:
    """The flat samples a prefix tree (``format=tree``) holds, one a leaf, in order: each its
    path's tokens split at its ``prompt_len`` into ``prompt_ids`` and ``response_ids``, the
    path's masks, logprobs (0 where nothing was sampled), version spans and images, and the rest
    of its leaf: equal, field for field, to the same samples exported flat.
    """
    out: List[Dict[str, Any]] = []
    for leaf in tree["leaves"]:
        rest = {key: value for key, value in leaf.items() if key not in ("node", "prompt_len")}
        prompt_len = leaf["prompt_len"]
        tokens: List[int] = []
        mask: List[int] = []
        logprobs: List[float] = []
        spans: List[Dict[str, Any]] = []
        images: List[Dict[str, Any]] = []
        for node in tree_path(tree, leaf["node"]):
            for span in node["version_spans"]:
                start = node["position"] + span["start"] - prompt_len
                end = node["position"] + span["end"] - prompt_len
                last = spans[-1] if spans else None
                if (span.get("continued") and last and last["end"] == start
                        and last["version"] == span["version"]):
                    last["end"] = end
                else:
                    spans.append({"version": span["version"], "start": start, "end": end})
            tokens.extend(node["tokens"])
            mask.extend(node["loss_mask"])
            logprobs.extend(0 if value is None else value for value in node["logprobs"])
            for image in node.get("images") or []:
                url = f"/sessions/{_quote(leaf['session_id'])}/images/{image['digest']}"
                images.append({**image, "url": url})
        sample = {
            **rest,
            "prompt_ids": tokens[:prompt_len],
            "response_ids": tokens[prompt_len:],
            "loss_mask": mask[prompt_len:],
            "logprobs": logprobs[prompt_len:],
            "version_spans": spans,
        }
        if images:
            sample["images"] = images
        out.append(sample)
    return out


@dataclass(frozen=True)
class PackedTree:
    """A prefix tree packed into one sequence (:func:`pack_tree`), its nodes end to end in
    depth-first order.

    ``tokens``, ``loss_mask`` and ``logprobs`` (``None`` where nothing was sampled) are the
    nodes' own; ``position_ids`` restart along each path (a token's position is its index in
    every sample through it, not in the packed sequence), so rotary embeddings see each sample as
    it was. ``blocks`` describe the attention mask, one a node: ``{"node", "start", "end",
    "attends", "leaves"}`` — its tokens are ``start:end`` of the sequence; each attends causally
    within the node and to every token of the ranges ``attends`` lists (its ancestors', root
    first), and to nothing else; ``leaves`` are the samples (indices into the tree's ``leaves``)
    whose paths go through it, whose rewards its sampled tokens carry. ``leaf_tokens[i]`` are the
    sequence's indices of sample ``i``'s tokens (``prompt_ids`` then ``response_ids``).
    """

    tokens: List[int]
    position_ids: List[int]
    loss_mask: List[int]
    logprobs: List[Optional[float]]
    blocks: List[Dict[str, Any]]
    leaf_tokens: List[List[int]]

    def may_attend(self, query: int, key: int) -> bool:
        """Whether the token at sequence index ``query`` attends to the one at ``key``."""
        block = self._block_of(query)
        if block["start"] <= key <= query:
            return True
        return any(start <= key < end for start, end in block["attends"])

    def _block_of(self, index: int) -> Dict[str, Any]:
        low, high = 0, len(self.blocks) - 1
        while low < high:
            middle = (low + high + 1) // 2
            if self.blocks[middle]["start"] <= index:
                low = middle
            else:
                high = middle - 1
        return self.blocks[low]


def pack_tree(tree: Mapping[str, Any]) -> PackedTree:
    """``tree`` (``format=tree``) as one sequence to train on, with parent-aware positions and a
    block description of its attention mask (:class:`PackedTree`): every shared prefix once.
    """
    tokens: List[int] = []
    positions: List[int] = []
    mask: List[int] = []
    logprobs: List[Optional[float]] = []
    blocks: List[Dict[str, Any]] = []
    through: List[List[int]] = [[] for _ in tree["nodes"]]
    for index, leaf in enumerate(tree["leaves"]):
        for node in tree_path(tree, leaf["node"]):
            if not through[node["id"]] or through[node["id"]][-1] != index:
                through[node["id"]].append(index)
    for node in tree["nodes"]:
        start = len(tokens)
        parent = node["parent"]
        attends = [] if parent is None else [
            *blocks[parent]["attends"], [blocks[parent]["start"], blocks[parent]["end"]]
        ]
        tokens.extend(node["tokens"])
        positions.extend(range(node["position"], node["position"] + len(node["tokens"])))
        mask.extend(node["loss_mask"])
        logprobs.extend(node["logprobs"])
        blocks.append({"node": node["id"], "start": start, "end": len(tokens),
                       "attends": attends, "leaves": through[node["id"]]})
    leaf_tokens = []
    for leaf in tree["leaves"]:
        indices: List[int] = []
        for node in tree_path(tree, leaf["node"]):
            block = blocks[node["id"]]
            indices.extend(range(block["start"], block["end"]))
        leaf_tokens.append(indices)
    return PackedTree(tokens, positions, mask, logprobs, blocks, leaf_tokens)


def _progress_line(group_id: str, views: List[Dict[str, Any]], elapsed: float) -> str:
    """One line of a group's state: finished count by outcome, running phases, totals."""
    finished = [v for v in views if v["phase"] in FINAL_PHASES]
    outcomes = ", ".join(
        f"{phase} {sum(v['phase'] == phase for v in finished)}"
        for phase in ("done", "failed", "aborted")
        if any(v["phase"] == phase for v in finished)
    )
    running = [
        f"{phase} {sum(v['phase'] == phase for v in views)}"
        for phase in ("queued", "booting", "agent", "evaluating")
        if any(v["phase"] == phase for v in views)
    ]
    turns = sum(v["progress"]["turns"] for v in views)
    tokens = sum(v["progress"]["tokens"] for v in views)
    parts = [f"{group_id}: {len(finished)}/{len(views)} finished" + (f" ({outcomes})" if outcomes else "")]
    parts += running + [f"{turns} turns", f"{tokens / 1000:.0f}k tokens", f"{elapsed:.0f} s"]
    return " · ".join(parts)


def _error_from(status: int, headers: Any, body: bytes) -> GatewayError:
    """The typed error for an error response; a body that is not the envelope keeps its text."""
    type_, request_id = None, headers.get("request-id")
    message = body.decode("utf-8", "replace").strip()[:500] or f"HTTP {status}"
    try:
        envelope = json.loads(body)
        type_, message = envelope["error"]["type"], str(envelope["error"]["message"])
        request_id = envelope.get("request_id") or request_id
    except (ValueError, KeyError, TypeError):
        pass
    cls = _ERRORS.get(status, GatewayError)
    if cls is OverloadedError:
        retry_after = _retry_after(headers)
        return OverloadedError(status, type_, message, request_id, retry_after=retry_after)
    return cls(status, type_, message, request_id)


def _retry_after(headers: Any) -> Optional[float]:
    """Seconds to wait: ``retry-after-ms`` if present, else ``retry-after`` in seconds."""
    for name, scale in (("retry-after-ms", 1000.0), ("retry-after", 1.0)):
        try:
            return float(headers[name]) / scale
        except (KeyError, TypeError, ValueError):
            continue
    return None


def _exported_list(exported: Dict[str, Any]) -> List[Dict[str, Any]]:
    """An export's list, whichever key the answer holds it under: ``samples`` (slime, verl,
    samples) or ``records`` (jsonl, xtuner), so a format added later reads the same."""
    for key in ("samples", "records"):
        listed = exported.get(key)
        if isinstance(listed, list):
            return listed
    raise ValueError(f"An export with neither samples nor records: {sorted(exported)}")


def _check_finite(body: Any) -> None:
    """Raises ValueError naming the first NaN or infinity in ``body`` (``score``,
    ``metadata.budget``, ``tests[2]``): JSON has no such numbers, and ``json`` would refuse them
    without saying where."""
    stack: List[Tuple[str, Any]] = [("", body)]
    while stack:
        path, value = stack.pop()
        if isinstance(value, float) and not math.isfinite(value):
            raise ValueError(f"{path or 'The body'} is {value}: expected a finite number")
        if isinstance(value, Mapping):
            items = [(f"{path}.{k}" if path else str(k), inner) for k, inner in value.items()]
        elif isinstance(value, (list, tuple)):
            items = [(f"{path}[{i}]", inner) for i, inner in enumerate(value)]
        else:
            continue
        stack.extend(reversed(items))  # the first in document order is found first


def _finite_bound(name: str, bound: Any) -> str:
    """A score bound of a listing as its query value; ValueError naming ``name`` unless finite."""
    if isinstance(bound, bool) or not isinstance(bound, (int, float)):
        raise ValueError(f"{name} is {bound!r}: expected a finite number")
    if isinstance(bound, float) and not math.isfinite(bound):
        raise ValueError(f"{name} is {bound}: expected a finite number")
    return repr(bound) if isinstance(bound, float) else str(bound)


def _quote(id: str) -> str:
    return urllib.parse.quote(id, safe="")


def _one_allocation(allocation: Optional[str], old_name: Optional[str]) -> Optional[str]:
    """``reward_allocation``, or ``reward_mode`` (its old name); the two must agree."""
    if allocation is not None and old_name is not None and allocation != old_name:
        raise ValueError(
            f"reward_mode={old_name!r} is the old name of reward_allocation={allocation!r}: give one"
        )
    return allocation if allocation is not None else old_name


def _query_value(value: Any) -> str:
    """A metadata value as the gateway compares it: JavaScript's ``String()`` of the value."""
    if isinstance(value, bool):
        return "true" if value else "false"
    if value is None:
        return "null"
    if isinstance(value, float) and value.is_integer():
        return str(int(value))
    return str(value)
