/**
 * The scripted engine's generate endpoint, in either dialect (SGLang's `/generate`, reference
 * sglang.md §1; vLLM's `/inference/v1/generate`, `_vllm.ts`): a call is logged, plays a queued
 * fault or waits out a pause, then answers its script's reply, streamed or whole, in the
 * dialect's shape.
 *
 * @module
 */
import type { GenerationState } from "./_generation_state.ts";
import { Output } from "./_output.ts";
import { NOTHING, type OutputLimits, plan, sglangLimits } from "./_plan.ts";
import type { PrefixCache } from "./_prefix_cache.ts";
import type { ScriptedSessions, SessionParams } from "./_sessions.ts";
import { ABORTED } from "./_run.ts";
import { type ChunkShape, cutShort, pauseFor, streamed } from "./_stream.ts";
import type { EngineCall, Fault, Script, ScriptedImage } from "./script.ts";
import { imageGrid, probeImage } from "../vision/mod.ts";
import type { ScriptedEngineOptions } from "./types.ts";
import { type EpochRun, epochsThen, scriptedRoutes } from "./_routes.ts";
import type { MoeShape } from "../engine/mod.ts";

/** What `/generate` reads and records: the engine's options, script, latency, faults and log. */
export interface GenerateContext {
  readonly options: ScriptedEngineOptions;
  readonly state: GenerationState;
  /** Every call, in arrival order, unless the options keep no log. */
  readonly calls: EngineCall[];
  /** Faults queued for the next calls, first first. */
  readonly faults: Fault[];
  /** The script in force. */
  script: Script;
  /** Sleep per output token, in milliseconds. */
  latencyMs: number;
  /** What its prefix cache holds, for the `cached_tokens` it reports. */
  readonly cache: PrefixCache;
  /** Its open engine sessions (SGLang's). */
  readonly sessions: ScriptedSessions;
  /** Aborted when the engine dies: its calls end with their connections cut. */
  readonly life: () => AbortSignal;
  /** The engine's life as a MoE model's routes depend on it (a revived engine is another). */
  readonly epoch: () => string;
}

/** A request as a dialect reads it. */
export interface ParsedCall {
  readonly rid: string;
  readonly inputIds: number[];
  /** The sampling parameters as sent (logged). */
  readonly sampling: Record<string, unknown>;
  readonly limits: OutputLimits;
  /** Top logprobs asked for at each position. */
  readonly topK: number;
  readonly stream: boolean;
  /** The request's prefix-cache namespace, when it named one. */
  readonly cacheSalt?: string;
  /** Its engine session and the request it continues (SGLang's `session_params`). */
  readonly session?: SessionParams;
  /** Its images (`image_data`): base64 or `data:` URLs, in prompt order. */
  readonly images?: readonly string[];
  /**
   * The routed experts it asks for (R3): from position `start` on (SGLang's
   * `routed_experts_start_len`; vLLM returns every row).
   */
  readonly routes?: { readonly start: number };
}

/** How one dialect reads a generate request and shapes its answers. */
export interface GenerateDialect {
  /** The call a body asks for, or why it is refused (400). */
  parse(body: Record<string, unknown> | null): ParsedCall | { readonly error: string };
  /** An error answer of `status`. */
  error(status: number, message: string): Response;
  /** A non-streamed answer (or a chunk: `finish` null mid-stream) of output `from..`. */
  answer(
    out: Output,
    from: number,
    finish: Record<string, unknown> | null,
    version: string,
  ): unknown;
  /** Stream chunks carry only new tokens (else each repeats everything so far). */
  readonly incremental: boolean;
  /** A stream chunk with no new tokens is not sent unless it finishes the call. */
  readonly skipEmpty: boolean;
  /** The header its router places a request by. */
  readonly routingHeader: string;
  /** It returns routed experts from position 0 unasked, as vLLM does with the engine flag. */
  readonly routesUnasked?: boolean;
}

/** SGLang's `/generate`, as `options` configure the scripted engine. */
export function sglangDialect(options: ScriptedEngineOptions): GenerateDialect {
  return {
    parse(body) {
      const inputIds = body?.input_ids;
      if (!body || !Array.isArray(inputIds) || inputIds.length === 0) {
        return { error: "input_ids cannot be empty." };
      }
      const sampling = (body.sampling_params ?? {}) as Record<string, unknown>;
      return {
        rid: String(body.rid ?? crypto.randomUUID().replaceAll("-", "")),
        inputIds,
        sampling,
        limits: sglangLimits(sampling),
        topK: Number(body.top_logprobs_num ?? 0),
        stream: body.stream === true,
        ...(typeof body.cache_salt === "string" ? { cacheSalt: body.cache_salt } : {}),
        ...sessionOf(body.session_params),
        ...(body.image_data === undefined ? {} : {
          images: (Array.isArray(body.image_data) ? body.image_data : [body.image_data])
            .map(String),
        }),
        ...(body.return_routed_experts === true
          ? { routes: { start: Number(body.routed_experts_start_len ?? 0) } }
          : {}),
      };
    },
    error: (status, message) => Response.json({ error: { message } }, { status }),
    answer: (out, from, finish, version) => out.chunk(from, finish, version),
    incremental: options.incrementalStreaming === true,
    skipEmpty: false,
    routingHeader: "x-smg-routing-key",
  };
}

/**
 * The images of `image_data` as the served vision model sees them, or why they are refused: the
 * model takes no images, or one is not an image it reads.
 */
function imagesOf(
  data: readonly string[],
  options: ScriptedEngineOptions,
): ScriptedImage[] | string {
  if (!options.vision) return "This model takes no images (image_data was given)";
  const images: ScriptedImage[] = [];
  for (const item of data) {
    const base64 = item.startsWith("data:") ? item.slice(item.indexOf(",") + 1) : item;
    try {
      const image = probeImage(base64, { maxBytes: 64 << 20, maxPixels: 1 << 28 });
      const grid = imageGrid(options.vision.settings, image.width, image.height);
      images.push({
        digest: image.digest,
        width: grid.width,
        height: grid.height,
        tokens: grid.tokens,
      });
    } catch (error) {
      return `Failed to load image: ${(error as Error).message}`;
    }
  }
  return images;
}

/** The `session_params` of a body, when it names a session. */
function sessionOf(params: unknown): { session?: SessionParams } {
  if (typeof params !== "object" || params === null) return {};
  const { id, rid } = params as Record<string, unknown>;
  if (typeof id !== "string") return {};
  return { session: { id, rid: typeof rid === "string" ? rid : null } };
}

/**
 * Why the engine refuses `call` (a 400), or `null`: a prompt whose image pads are not its images'
 * tokens, as an engine matches them; routed experts asked of a server not launched to return
 * them, or from a start outside the prompt.
 */
function callProblem(
  call: EngineCall,
  routesStart: number | null,
  options: ScriptedEngineOptions,
): string | null {
  const { inputIds, images } = call;
  if (options.vision) {
    const pads = inputIds.reduce((n, id) => n + (id === options.vision!.padId ? 1 : 0), 0);
    const tokens = (images ?? []).reduce((n, image) => n + image.tokens, 0);
    if (pads !== tokens) {
      return `The prompt holds ${pads} image tokens; its ${
        images?.length ?? 0
      } image(s) take ${tokens}`;
    }
  }
  if (routesStart === null) return null;
  if (!options.moe) {
    return "return_routed_experts requires the server to be launched with " +
      "--enable-return-routed-experts";
  }
  if (!Number.isInteger(routesStart) || routesStart < 0 || routesStart > inputIds.length) {
    return `routed_experts_start_len=${routesStart} must be in [0, prompt_tokens=${inputIds.length}]`;
  }
  call.routesFrom = routesStart;
  return null;
}

/**
 * The routed experts of `out`'s sequence from position `from`, made when the answer asks for
 * them (the computation that forwarded each position from `epochs`) and kept on the call.
 */
function routesOf(
  call: EngineCall,
  out: Output,
  moe: MoeShape,
  from: number,
  epochs: (end: number) => readonly EpochRun[],
  split: boolean,
): NonNullable<Output["routes"]> {
  let rows: Int32Array | null = null;
  return {
    rows: () => {
      const sequence = [...call.inputIds, ...out.ids()];
      rows ??= scriptedRoutes(moe, sequence, from, sequence.length - 1, epochs(sequence.length));
      call.routes = { start: from, values: rows };
      return rows;
    },
    shape: moe,
    split,
  };
}

/** The call a request makes, as the engine's log keeps it. */
function engineCall(
  request: Request,
  parsed: ParsedCall,
  inputIds: number[],
  images: ScriptedImage[] | null,
  routingKey: string | null,
): EngineCall {
  const length = Number(request.headers.get("content-length") ?? NaN);
  return {
    rid: parsed.rid,
    ...(Number.isFinite(length) ? { bodyBytes: length } : {}),
    inputIds,
    ...(parsed.session ? { sentIds: parsed.inputIds, session: parsed.session.id } : {}),
    ...(images ? { images } : {}),
    sampling: parsed.sampling,
    ...(parsed.cacheSalt === undefined ? {} : { cacheSalt: parsed.cacheSalt }),
    ...(routingKey === null ? {} : { routingKey }),
    receivedAt: Date.now(),
  };
}

/** Answers one generate request in `dialect`. */
export async function generate(
  request: Request,
  engine: GenerateContext,
  dialect: GenerateDialect = sglangDialect(engine.options),
): Promise<Response> {
  const { options, state } = engine;
  const { tokenizer } = options;
  const received = performance.now();
  const body = await request.json().catch(() => null);
  const parsed = dialect.parse(body);
  if ("error" in parsed) return dialect.error(400, parsed.error);
  const routingKey = request.headers.get(dialect.routingHeader);
  const images = parsed.images ? imagesOf(parsed.images, engine.options) : null;
  if (typeof images === "string") return dialect.error(400, images);
  // A session's request is built from the one it continues; an unknown session or parent aborts it.
  const built = parsed.session
    ? engine.sessions.begin(parsed.session, parsed.rid, parsed.inputIds)
    : null;
  const inputIds = built && "input" in built ? [...built.input] : parsed.inputIds;
  const call = engineCall(request, parsed, inputIds, images, routingKey);
  if (options.keepLog !== false) engine.calls.push(call);
  const refused400 = callProblem(call, parsed.routes?.start ?? null, options);
  if (refused400 !== null) return dialect.error(400, refused400);
  const fault = engine.faults.shift() ?? options.faultFor?.(call);
  if (fault?.kind === "unavailable") return new Response("Service Unavailable", { status: 503 });
  if (fault?.kind === "reject") return dialect.error(400, fault.message);
  // While paused, a new call waits inside the engine until generation continues.
  while (state.pause !== null) await state.pause.continued;
  const script = engine.script;
  const refused = built !== null && "abort" in built;
  // A call the engine aborts at once (or one that hangs) takes no reply from the script.
  const reply = fault?.kind === "hang" || refused
    ? NOTHING
    : script(call, () => tokenizer.decode(inputIds));
  const planned = plan(tokenizer, call, reply, options.spelling, parsed.limits);
  let tokens = planned.tokens;
  let finish: Record<string, unknown> = planned.finish;
  if (fault?.kind === "abort") {
    tokens = tokens.slice(0, fault.after);
    finish = { ...ABORTED, message: "Abort before weight update" };
  }
  if (built !== null && "abort" in built) {
    tokens = [];
    finish = { ...ABORTED, message: built.abort, status_code: 400 };
  }
  const perToken = (fault?.kind === "slow" ? fault.latencyMs : undefined) ??
    (typeof reply === "string" ? undefined : reply.latencyMs) ?? engine.latencyMs;
  const run = state.startRun(call.rid, request.signal);
  const out = new Output(call, tokens, parsed.topK, received, () => run.retractions, tokenizer);
  out.cachedTokens = engine.cache.match(inputIds, parsed.cacheSalt);
  call.cachedTokens = out.cachedTokens;
  // The positions the cache served keep the computation that forwarded them (R3).
  const served = engine.cache.epochs(inputIds, out.cachedTokens, "");
  const epochs = (end: number) =>
    epochsThen(served, end, `${engine.epoch()}/${state.weightVersion}`);
  // vLLM returns every row, unasked, when its server was launched to.
  const routesFrom = parsed.routes?.start ?? (dialect.routesUnasked ? 0 : null);
  if (options.moe && routesFrom !== null) {
    out.routes = routesOf(
      call,
      out,
      options.moe,
      routesFrom,
      epochs,
      options.vllmRoutes === "split",
    );
  }
  const finished = async (): Promise<Record<string, unknown>> => {
    const produced = await state.produce(
      run,
      out,
      perToken,
      fault?.kind === "hang",
      parsed.stream,
    );
    run.done();
    if (fault?.kind === "abort" && fault.weightVersion) state.weightVersion = fault.weightVersion;
    return produced < tokens.length || fault?.kind === "hang" ? run.abortedAs : finish;
  };
  const answered = (final: Record<string, unknown>) => {
    call.output = out.ids();
    call.finishedAt = Date.now();
    engine.cache.add(
      inputIds,
      call.output,
      parsed.cacheSalt,
      epochs(inputIds.length + call.output.length),
    );
    if (parsed.session) engine.sessions.finish(parsed.session.id, call.rid, call.output);
    options.onAnswer?.(call, String(final.type));
  };
  if (parsed.stream) {
    const shape: ChunkShape = (from, finish, version) =>
      dialect.skipEmpty && finish === null && from >= out.produced
        ? null
        : dialect.answer(out, from, finish, version);
    return streamed(out, run, finished, answered, () => state.weightVersion, {
      incremental: dialect.incremental,
      dropAfterMs: fault?.kind === "drop" ? fault.afterMs : null,
      shape,
      life: engine.life(),
    });
  }
  const version = state.weightVersion;
  const life = engine.life();
  const die = () => run.stop();
  life.addEventListener("abort", die, { once: true });
  const final = await finished().finally(() => life.removeEventListener("abort", die));
  // A dead engine's answer never arrives whole.
  if (life.aborted) return cutShort("{}");
  // A non-streamed answer reports the version it started under unless it sampled under others.
  const answer = dialect.answer(out, 0, final, out.spans.at(-1)?.version ?? version);
  if (fault?.kind === "drop") {
    await pauseFor(fault.afterMs, request.signal);
    return cutShort(JSON.stringify(answer));
  }
  answered(final);
  return Response.json(answer);
}
