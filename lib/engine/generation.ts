/**
 * A generation across its engine calls, whatever the dialect: the output gathered so far (ids,
 * logprobs, top logprobs, the weight version of each token), who is told of new tokens, and the
 * loop that resumes a generation the engine aborted itself (a weight update) by sending prompt +
 * partial output again for the tokens left, under a new request id.
 *
 * @module
 */
import type { GatewayMetrics } from "../metrics/mod.ts";
import {
  type EngineFinish,
  EngineUnavailableError,
  type GenerateRequest,
  type Generation,
  newRid,
  type VersionSpan,
} from "./engine.ts";
import { PromptIds } from "./prompt_ids.ts";
import type { ExpertRows } from "./routed_experts.ts";

/** Tokens one engine answer or chunk adds: ids, their logprobs, each position's top `[id, lp]`s. */
export interface SampledChunk {
  readonly ids: readonly number[];
  readonly logprobs: readonly number[];
  /** Empty unless top logprobs were asked for. */
  readonly tops: readonly (readonly [number, number])[][];
}

/** How one engine call ended: finished, or aborted by the engine (to be resumed). */
export type CallEnd =
  & ({ readonly finish: EngineFinish } | { readonly aborted: string })
  & {
    readonly reportedMs: number;
    /** Prompt tokens the engine reports served from its prefix cache, when it reports them. */
    readonly cachedTokens?: number;
    /** The routed experts the call reported (R3), when asked; `null` when it sent none. */
    readonly routes?: ExpertRows | null;
  };

/**
 * `end` with the routed experts `routes` reads, when the call asked for them: `output` is told it
 * answered first (`GenerateRequest.onAnswered`), so what waits on the rows goes on meanwhile.
 */
export async function withRoutes(
  output: GeneratedSoFar,
  end: CallEnd,
  routes: Promise<ExpertRows | null> | undefined,
): Promise<CallEnd> {
  if (routes === undefined) return end;
  output.answered(end);
  return { ...end, routes: await routes };
}

/** One engine call of a dialect: `inputIds` for at most `maxNew` tokens, into `output`. */
export type EngineCall = (
  rid: string,
  inputIds: PromptIds,
  maxNew: number,
  output: GeneratedSoFar,
) => Promise<CallEnd>;

/**
 * Runs `req` through `call` until it finishes, resuming engine-side aborts at most `maxResumes`
 * times.
 *
 * @throws {EngineUnavailableError} when the engine aborts it more often, or with nothing left.
 */
export async function generateResuming(
  req: GenerateRequest,
  maxNew: number,
  options: { readonly maxResumes: number; readonly metrics?: GatewayMetrics },
  call: EngineCall,
): Promise<Generation> {
  const started = performance.now();
  let aborts = 0;
  let reportedMs = 0;
  let cachedTokens: number | undefined;
  const firstRid = req.rid ?? newRid();
  const prompt = req.inputIds instanceof PromptIds ? req.inputIds : PromptIds.from(req.inputIds);
  /** The generation a finished call ends, but for its rows. */
  const ended = (end: CallEnd & { finish: EngineFinish }): Omit<Generation, "routes"> => {
    // The first call's prompt is the turn's: a resumed call's is mostly the same prompt again.
    const cached = aborts === 0 ? end.cachedTokens : cachedTokens;
    return {
      rid: firstRid,
      outputIds: output.ids,
      logprobs: output.logprobs,
      ...(req.topLogprobs ? { topLogprobs: output.tops } : {}),
      finish: end.finish,
      weightVersions: output.weightVersions,
      versionSpans: output.spans,
      aborts,
      engineMs: performance.now() - started,
      engineReportedMs: reportedMs + end.reportedMs,
      ...(cached === undefined ? {} : { cachedTokens: cached }),
    };
  };
  const onAnswered = req.onAnswered;
  const output = new GeneratedSoFar(
    req,
    onAnswered && ((end) => void ("finish" in end && onAnswered(ended(end)))),
  );
  for (;;) {
    const rid = aborts === 0 ? firstRid : newRid();
    const end = await call(rid, prompt.concat(output.ids), maxNew - output.ids.length, output);
    if ("aborted" in end) {
      reportedMs += end.reportedMs;
      if (aborts === 0) cachedTokens = end.cachedTokens;
      req.signal?.throwIfAborted();
      options.metrics?.engineAborts.inc();
      if (aborts >= options.maxResumes || output.ids.length >= maxNew) {
        throw new EngineUnavailableError(
          `Engine aborted the generation ${aborts + 1} times: ${end.aborted}`,
        );
      }
      aborts++;
      options.metrics?.engineResumes.inc();
      continue;
    }
    return {
      ...ended(end),
      // The finishing call read the prompt and every token sampled before it: its rows cover all.
      ...(req.routes ? { routes: end.routes ?? null } : {}),
    };
  }
}

/** A generation's output across its engine calls, and who is told of new tokens. */
export class GeneratedSoFar {
  readonly ids: number[] = [];
  readonly logprobs: number[] = [];
  readonly tops: [number, number][][] = [];
  readonly spans: VersionSpan[] = [];
  readonly weightVersions: string[] = [];

  /** Told of a call's end before its routed experts are read. */
  readonly #onAnswered: ((end: CallEnd) => void) | undefined;

  constructor(readonly request: GenerateRequest, onAnswered?: (end: CallEnd) => void) {
    this.#onAnswered = onAnswered;
  }

  /** The call's tokens are all in, and it ended so; its routed experts are still being read. */
  answered(end: CallEnd): void {
    this.#onAnswered?.(end);
  }

  /**
   * A whole answer's tokens, split by the version `spans` it reports when they cover it exactly
   * (else all under `version`).
   */
  addSpanned(
    tokens: SampledChunk,
    spans: readonly VersionSpan[] | null | undefined,
    version: string | undefined,
  ): void {
    const covered = spans != null && spans.length > 0 && spans[0].start === 0 &&
      spans.at(-1)!.end === tokens.ids.length &&
      spans.every((span, i) => i === 0 || span.start === spans[i - 1].end);
    if (!covered) return this.add(tokens, version);
    for (const span of spans) {
      this.add({
        ids: tokens.ids.slice(span.start, span.end),
        logprobs: tokens.logprobs.slice(span.start, span.end),
        tops: tokens.tops.slice(span.start, span.end),
      }, span.version);
    }
  }

  /** New tokens sampled under `version` (`default` when unnamed), reported at once. */
  add(tokens: SampledChunk, version = "default"): void {
    if (tokens.ids.length === 0) return;
    const start = this.ids.length;
    for (let i = 0; i < tokens.ids.length; i++) {
      this.ids.push(tokens.ids[i]);
      this.logprobs.push(tokens.logprobs[i]);
    }
    if (this.request.topLogprobs) {
      for (let i = 0; i < tokens.ids.length; i++) {
        this.tops.push((tokens.tops[i] ?? []).map(([id, logprob]) => [id, logprob]));
      }
    }
    const last = this.spans.at(-1);
    if (last?.version === version) {
      this.spans[this.spans.length - 1] = { ...last, end: this.ids.length };
    } else this.spans.push({ version, start, end: this.ids.length });
    if (this.weightVersions.at(-1) !== version) this.weightVersions.push(version);
    this.request.onTokens?.({
      ids: tokens.ids,
      logprobs: this.logprobs.slice(start),
      weightVersion: version,
      ...(this.request.topLogprobs ? { tops: this.tops.slice(start) } : {}),
    });
  }

  /**
   * Labels output positions `from..` with `spans` (positions counted from `from`), as an engine
   * that names versions only at the end of a call reports them; the tokens were already told
   * under the label known then.
   */
  relabel(from: number, spans: readonly VersionSpan[]): void {
    const end = this.ids.length;
    const covered = spans.length > 0 && spans[0].start === 0 &&
      spans.at(-1)!.end === end - from &&
      spans.every((span, i) => i === 0 || span.start === spans[i - 1].end);
    if (!covered) return;
    const kept = this.spans.filter((span) => span.start < from)
      .map((span) => ({ ...span, end: Math.min(span.end, from) }));
    for (const span of spans) {
      const last = kept.at(-1);
      if (last?.version === span.version) last.end = from + span.end;
      else kept.push({ version: span.version, start: from + span.start, end: from + span.end });
    }
    this.spans.splice(0, this.spans.length, ...kept);
    this.weightVersions.splice(
      0,
      this.weightVersions.length,
      ...kept.map((span) => span.version).filter((version, i, all) => all[i - 1] !== version),
    );
  }
}
