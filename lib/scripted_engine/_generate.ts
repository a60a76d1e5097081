/**
 * The scripted engine's `/generate` (reference sglang.md §1): a call is logged, plays a queued
 * fault or waits out a pause, then answers its script's reply, streamed or whole.
 *
 * @module
 */
import type { GenerationState } from "./_generation_state.ts";
import { Output } from "./_output.ts";
import { NOTHING, plan } from "./_plan.ts";
import { ABORTED } from "./_run.ts";
import { cutShort, pauseFor, streamed } from "./_stream.ts";
import type { EngineCall, Fault, Script } from "./script.ts";
import type { ScriptedEngineOptions } from "./types.ts";

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
}

/** Answers one `/generate` request. */
export async function generate(request: Request, engine: GenerateContext): Promise<Response> {
  const { options, state } = engine;
  const { tokenizer } = options;
  const received = performance.now();
  const body = await request.json().catch(() => null);
  const inputIds = body?.input_ids;
  if (!Array.isArray(inputIds) || inputIds.length === 0) {
    return Response.json({ error: { message: "input_ids cannot be empty." } }, { status: 400 });
  }
  const call: EngineCall = {
    rid: String(body.rid ?? crypto.randomUUID().replaceAll("-", "")),
    inputIds,
    sampling: body.sampling_params ?? {},
    receivedAt: Date.now(),
  };
  if (options.keepLog !== false) engine.calls.push(call);
  const fault = engine.faults.shift() ?? options.faultFor?.(call);
  if (fault?.kind === "unavailable") return new Response("Service Unavailable", { status: 503 });
  if (fault?.kind === "reject") {
    return Response.json({ error: { message: fault.message } }, { status: 400 });
  }
  // While paused, a new call waits inside the engine until generation continues.
  while (state.pause !== null) await state.pause.continued;
  const script = engine.script;
  const reply = fault?.kind === "hang" ? NOTHING : script(call, () => tokenizer.decode(inputIds));
  const planned = plan(tokenizer, call, reply, options.spelling);
  let tokens = planned.tokens;
  let finish: Record<string, unknown> = planned.finish;
  if (fault?.kind === "abort") {
    tokens = tokens.slice(0, fault.after);
    finish = { ...ABORTED, message: "Abort before weight update" };
  }
  const perToken = (fault?.kind === "slow" ? fault.latencyMs : undefined) ??
    (typeof reply === "string" ? undefined : reply.latencyMs) ?? engine.latencyMs;
  const run = state.startRun(call.rid, request.signal);
  const topK = Number(body.top_logprobs_num ?? 0);
  const out = new Output(call, tokens, topK, received, () => run.retractions, tokenizer);
  const finished = async (): Promise<Record<string, unknown>> => {
    const produced = await state.produce(
      run,
      out,
      perToken,
      fault?.kind === "hang",
      body.stream === true,
    );
    run.done();
    if (fault?.kind === "abort" && fault.weightVersion) state.weightVersion = fault.weightVersion;
    return produced < tokens.length || fault?.kind === "hang" ? run.abortedAs : finish;
  };
  const answered = (final: Record<string, unknown>) => {
    call.output = out.ids();
    call.finishedAt = Date.now();
    options.onAnswer?.(call, String(final.type));
  };
  if (body.stream === true) {
    return streamed(out, run, finished, answered, () => state.weightVersion, {
      incremental: options.incrementalStreaming === true,
      dropAfterMs: fault?.kind === "drop" ? fault.afterMs : null,
    });
  }
  const version = state.weightVersion;
  const final = await finished();
  // A non-streamed answer reports the version it started under unless it sampled under others.
  const answer = out.chunk(0, final, out.spans.at(-1)?.version ?? version);
  if (fault?.kind === "drop") {
    await pauseFor(fault.afterMs, request.signal);
    return cutShort(JSON.stringify(answer));
  }
  answered(final);
  return Response.json(answer);
}
