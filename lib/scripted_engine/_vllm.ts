/**
 * The scripted engine speaking vLLM (as vLLM's own
 * `token_in_token_out/protocol.py` and `serve/dev/rlhf/api_router.py` define it; docs/engines.md): `POST
 * /inference/v1/generate` with `token_ids` in and `choices[0].token_ids` with `logprobs.content`
 * out, streamed as SSE deltas (a chunk with no new tokens is not sent unless it finishes), the
 * weight version spans on the answer (and the final chunk); and the dev-mode controls `/pause`,
 * `/resume`, `/is_paused`, `/abort_requests`, `/update_weight_version`, `/weight_info`.
 *
 * @module
 */
import type { GenerateDialect } from "./_generate.ts";
import type { GenerationState } from "./_generation_state.ts";
import type { Output } from "./_output.ts";
import { scriptedLogprob, scriptedTopLogprobs } from "./logprobs.ts";
import { expertDtype, expertValues, toBase64, writeNpy } from "../engine/mod.ts";
import type { PauseMode } from "./types.ts";

/** The prefix vLLM gives a token-in/token-out request's id inside the engine. */
export const VLLM_ID_PREFIX = "generate-tokens-";

/** The pause modes vLLM's `/pause` takes. */
export const VLLM_PAUSE_MODES: readonly PauseMode[] = ["abort", "wait", "keep"];

/** vLLM's error body (`{error: {message, type, param, code}}`). */
function vllmError(status: number, message: string): Response {
  const type = status === 404 ? "NotFoundError" : "BadRequestError";
  return Response.json({ error: { message, type, param: null, code: status } }, { status });
}

/** vLLM's `/inference/v1/generate`. */
export const VLLM_GENERATE: GenerateDialect = {
  parse(body) {
    const tokenIds = body?.token_ids;
    if (!body || !Array.isArray(tokenIds) || tokenIds.length === 0) {
      return { error: "1 validation error: token_ids: List should have at least 1 item" };
    }
    const sampling = body.sampling_params;
    if (sampling === null || typeof sampling !== "object" || Array.isArray(sampling)) {
      return { error: "1 validation error: sampling_params: Field required" };
    }
    const params = sampling as Record<string, unknown>;
    const logprobs = Number(params.logprobs ?? -1);
    return {
      rid: String(body.request_id ?? crypto.randomUUID().replaceAll("-", "")),
      inputIds: tokenIds,
      sampling: params,
      limits: {
        maxNew: Number(params.max_tokens ?? 16),
        stopIds: (params.stop_token_ids as number[] | undefined) ?? [],
        stops: typeof params.stop === "string"
          ? [params.stop]
          : (params.stop as string[] | undefined) ?? [],
      },
      // vLLM lists max(N, 1) entries, the sampled token first; none without `logprobs`.
      topK: logprobs < 0 ? 0 : Math.max(1, logprobs),
      stream: body.stream === true,
      ...(typeof body.cache_salt === "string" ? { cacheSalt: body.cache_salt } : {}),
    };
  },
  error: vllmError,
  answer: (out, from, finish, version) => vllmAnswer(out, from, finish, version),
  incremental: true,
  skipEmpty: true,
  routingHeader: "x-session-id",
  routesUnasked: true,
};

/**
 * vLLM's `/v1/completions` with the prompt as token ids (as servers older than 0.20 serve token
 * ids): `return_token_ids` for the sampled ids, `return_tokens_as_token_ids` for logprobs named
 * `token_id:N`, each position's `top_logprobs` the sampled token and the `logprobs` most likely.
 */
export const VLLM_COMPLETIONS: GenerateDialect = {
  parse(body) {
    const prompt = body?.prompt;
    if (!body || !Array.isArray(prompt) || prompt.length === 0) {
      return { error: "1 validation error: prompt: the prompt as token ids is required here" };
    }
    if (body.return_token_ids !== true) {
      return { error: "the scripted engine answers only with return_token_ids: true" };
    }
    const logprobs = body.logprobs === undefined || body.logprobs === null
      ? -1
      : Number(body.logprobs);
    return {
      rid: String(body.request_id ?? crypto.randomUUID().replaceAll("-", "")),
      inputIds: prompt,
      sampling: body,
      limits: {
        maxNew: Number(body.max_tokens ?? 16),
        stopIds: (body.stop_token_ids as number[] | undefined) ?? [],
        stops: typeof body.stop === "string"
          ? [body.stop]
          : (body.stop as string[] | undefined) ?? [],
      },
      // The sampled token and the `logprobs` most likely (it is the most likely here).
      topK: logprobs < 0 ? 0 : logprobs + 1,
      stream: body.stream === true,
      ...(typeof body.cache_salt === "string" ? { cacheSalt: body.cache_salt } : {}),
    };
  },
  error: vllmError,
  answer: (out, from, finish) => completionsAnswer(out, from, finish),
  incremental: true,
  skipEmpty: true,
  routingHeader: "x-session-id",
  routesUnasked: true,
};

/**
 * The routed experts of a finished call as vLLM answers them: every row, the choice's
 * `routed_experts` as base64 of a `.npy` in the smallest type that holds the model's experts; or
 * (`split`, older servers) the prompt's rows as nested lists in `prompt_routed_experts` and the
 * output's but its last on the choice. `null` mid-stream, for an abort, and without routes.
 */
function vllmRoutes(
  out: Output,
  finish: Record<string, unknown> | null,
): { choice: Record<string, unknown>; top: Record<string, unknown> } | null {
  if (finish === null || finish.type === "abort" || out.routes === null) return null;
  const { shape } = out.routes;
  const rows = out.routes.rows();
  const width = shape.layers * shape.topK;
  const count = rows.length / width;
  if (!out.routes.split) {
    const values = expertValues(expertDtype(shape), rows.length);
    values.set(rows);
    return {
      choice: {
        routed_experts: toBase64(writeNpy(values, [count, shape.layers, shape.topK])),
      },
      top: {},
    };
  }
  const nested = (from: number, to: number) =>
    Array.from({ length: to - from }, (_, r) =>
      Array.from({ length: shape.layers }, (_, l) => {
        const at = (from + r) * width + l * shape.topK;
        return Array.from(rows.subarray(at, at + shape.topK));
      }));
  const prompt = out.call.inputIds.length;
  return {
    choice: { routed_experts: nested(prompt, count) },
    top: { prompt_routed_experts: nested(0, prompt) },
  };
}

/** A completion, or a chunk of one (`finish` null mid-stream), of output `from..`. */
function completionsAnswer(
  out: Output,
  from: number,
  finish: Record<string, unknown> | null,
): unknown {
  const ids = out.planned.slice(from, out.produced);
  const k = out.topK;
  const routes = vllmRoutes(out, finish);
  return {
    ...routes?.top,
    id: `cmpl-${out.call.rid}`,
    object: "text_completion",
    created: Math.floor(Date.now() / 1000),
    model: "scripted",
    choices: [{
      index: 0,
      text: out.tokenizer.decode(ids),
      token_ids: ids,
      ...(from === 0 ? { prompt_token_ids: out.call.inputIds } : {}),
      logprobs: k === 0 ? null : {
        text_offset: ids.map(() => 0),
        tokens: ids.map((token) => `token_id:${token}`),
        token_logprobs: ids.map((token, i) => scriptedLogprob(token, from + i)),
        top_logprobs: ids.map((token, i) =>
          Object.fromEntries(
            scriptedTopLogprobs(token, from + i, k).map((
              [logprob, id],
            ) => [`token_id:${id}`, logprob]),
          )
        ),
      },
      finish_reason: finish === null ? null : String(finish.type),
      stop_reason: finish?.type === "stop" ? finish.matched ?? null : null,
      ...routes?.choice,
    }],
    usage: finish === null ? null : {
      prompt_tokens: out.call.inputIds.length,
      completion_tokens: out.produced,
      total_tokens: out.call.inputIds.length + out.produced,
      prompt_tokens_details: { cached_tokens: out.cachedTokens },
    },
  };
}

/** An answer, or a chunk (`finish` null mid-stream), of output `from..` in vLLM's shape. */
function vllmAnswer(
  out: Output,
  from: number,
  finish: Record<string, unknown> | null,
  version: string,
): unknown {
  const ids = out.planned.slice(from, out.produced);
  const k = out.topK;
  const spans = out.spans.length > 0 ? out.spans.map((span) => ({ ...span })) : [
    { version, start: 0, end: out.produced },
  ];
  const routes = vllmRoutes(out, finish);
  return {
    ...routes?.top,
    request_id: `${VLLM_ID_PREFIX}${out.call.rid}`,
    output_mode: "tokens",
    choices: [{
      index: 0,
      finish_reason: finish === null ? null : String(finish.type),
      ...(finish?.type === "stop" ? { stop_reason: finish.matched ?? null } : {}),
      token_ids: ids,
      logprobs: k === 0 ? null : {
        content: ids.map((token, i) => ({
          token_id: token,
          logprob: scriptedLogprob(token, from + i),
          rank: null,
          top_logprobs: scriptedTopLogprobs(token, from + i, k).map(([logprob, id]) => ({
            token_id: id,
            logprob,
            rank: null,
          })),
        })),
      },
      // Spans over the whole output, on the answer and the final chunk only.
      weight_versions: finish === null ? null : spans,
      ...routes?.choice,
    }],
    usage: finish === null ? null : {
      prompt_tokens: out.call.inputIds.length,
      completion_tokens: out.produced,
      total_tokens: out.call.inputIds.length + out.produced,
      prompt_tokens_details: { cached_tokens: out.cachedTokens },
    },
  };
}

/** Answers vLLM's control routes, or `null` for any other request. */
export async function vllmControl(
  request: Request,
  path: string,
  state: GenerationState,
  abortRequests: string[],
): Promise<Response | null> {
  if (request.method === "POST" && path === "/pause") {
    const mode = new URL(request.url).searchParams.get("mode") ?? "abort";
    await request.body?.cancel();
    if (!VLLM_PAUSE_MODES.includes(mode as PauseMode)) {
      return Response.json({ error: `Invalid mode: ${mode}` }, { status: 400 });
    }
    await state.pauseGeneration(mode as PauseMode);
    return Response.json({ status: "paused" });
  }
  if (request.method === "POST" && path === "/resume") {
    await request.body?.cancel();
    state.continueGeneration();
    return Response.json({ status: "resumed" });
  }
  if (request.method === "GET" && path === "/is_paused") {
    return Response.json({ is_paused: state.pause !== null });
  }
  if (request.method === "POST" && path === "/abort_requests") {
    const body = await request.json().catch(() => ({}));
    const ids: unknown[] = Array.isArray(body?.request_ids) ? body.request_ids : [];
    // No ids: every running request (the dev-mode route's reading).
    const rids = ids.length === 0
      ? [...state.running.keys()]
      : ids.map((id) => String(id).replace(VLLM_ID_PREFIX, ""));
    for (const rid of rids) {
      abortRequests.push(rid);
      state.running.get(rid)?.stop();
    }
    return Response.json({ status: "aborted", aborted: rids.length });
  }
  if (request.method === "POST" && path === "/update_weight_version") {
    const body = await request.json().catch(() => ({}));
    await state.updateWeights(body?.new_version, false);
    return Response.json({ success: true, new_version: state.weightVersion });
  }
  if (request.method === "GET" && path === "/weight_info") {
    return Response.json({ weight_version: state.weightVersion });
  }
  return null;
}
