/**
 * The scripted engine's generation state: the calls running now, the pause in force, the weight
 * version it samples under; and how a call produces its tokens under them, so that pauses,
 * continues, aborts and weight updates act on running calls as SGLang's do.
 *
 * @module
 */
import type { Output } from "./_output.ts";
import { ABORTED, type Run } from "./_run.ts";
import type { PauseMode } from "./types.ts";

/** A `/pause_generation` in force until `/continue_generation` resolves `continued`. */
interface Pause {
  mode: PauseMode;
  readonly continued: Promise<void>;
  resume(): void;
}

/** What a scripted engine is generating, under which pause and weight version. */
export class GenerationState {
  /** The weight version tokens are sampled under now. */
  weightVersion: string;
  /** The pause in force, or `null` while generating. */
  pause: Pause | null = null;
  /** Calls producing tokens now, by rid. */
  readonly running = new Map<string, Run>();
  /** The mode of every `/pause_generation` call, in order. */
  readonly pauses: PauseMode[] = [];
  /** The weight version after every weight update call, in order. */
  readonly weightUpdates: string[] = [];
  /** Settles at the next {@linkcode GenerationState.wake}. */
  changed: Promise<void>;
  #notify: () => void = () => {};

  constructor(weightVersion: string) {
    this.weightVersion = weightVersion;
    this.changed = new Promise<void>((resolve) => this.#notify = resolve);
  }

  /** Wakes every producer (a stop, a pause, a continue). */
  wake(): void {
    const resolve = this.#notify;
    this.changed = new Promise((next) => this.#notify = next);
    resolve();
  }

  /** Waits `ms` (forever when `null`), or less if something changes. */
  sleepOrChange(ms: number | null): Promise<void> {
    let timer: ReturnType<typeof setTimeout> | undefined;
    const slept = ms === null ? this.changed : new Promise<void>((resolve) => {
      timer = setTimeout(resolve, Math.max(0, ms));
    });
    return Promise.race([slept, this.changed]).finally(() => clearTimeout(timer));
  }

  /** A call producing tokens: stopped by `/abort_request`, its client leaving, or a pause. */
  startRun(rid: string, signal: AbortSignal): Run {
    const run: Run = {
      stopped: false,
      abortedAs: ABORTED,
      retractions: 0,
      stop: (as = ABORTED) => {
        if (run.stopped) return;
        run.stopped = true;
        run.abortedAs = as;
        this.wake();
      },
      done: () => {
        this.running.delete(rid);
        signal.removeEventListener("abort", onAbort);
        this.wake();
      },
    };
    const onAbort = () => run.stop();
    this.running.set(rid, run);
    if (signal.aborted) run.stop();
    else signal.addEventListener("abort", onAbort, { once: true });
    return run;
  }

  /**
   * Produces `out`'s planned tokens at `perToken` ms each (all at once when 0), holding while
   * generation is paused (retract and in place); returns how many were produced before a stop.
   * A hung call produces nothing until it is stopped.
   */
  async produce(
    run: Run,
    out: Output,
    perToken: number,
    hang: boolean,
    stepwise: boolean,
  ): Promise<number> {
    let clock = performance.now();
    let budget = 0; // token-times elapsed since the last emission, in ms
    let heldBy: Pause | null = null;
    while (!run.stopped && (hang || out.produced < out.planned.length)) {
      const pause = this.pause;
      // A `wait` pause lets running calls finish; every other mode holds them.
      if (pause !== null && pause.mode !== "wait") {
        if (pause !== heldBy && pause.mode === "retract" && out.produced > 0) run.retractions++;
        heldBy = pause;
        await Promise.race([pause.continued, this.changed]);
        clock = performance.now();
        continue;
      }
      if (!hang) {
        const now = performance.now();
        budget += now - clock;
        clock = now;
        const due = perToken > 0 ? Math.floor(budget / perToken) : out.planned.length;
        if (due > 0) {
          budget -= due * perToken;
          const to = Math.min(out.planned.length, out.produced + due);
          // A stream gets a chunk per token, as SGLang's default stream interval sends them.
          if (stepwise) {
            while (out.produced < to) out.emit(out.produced + 1, this.weightVersion);
          } else out.emit(to, this.weightVersion);
          continue;
        }
      }
      const wait = hang ? null : perToken - budget;
      await this.sleepOrChange(wait);
    }
    return out.produced;
  }

  /**
   * A pause: `abort` aborts every running call, `wait` lets them finish (both return once none
   * runs); `retract`, `in_place` and `keep` hold them. New calls wait until continue.
   */
  async pauseGeneration(mode: PauseMode): Promise<void> {
    if (this.pause === null) {
      let resume: () => void = () => {};
      const continued = new Promise<void>((resolve) => resume = resolve);
      this.pause = { mode, continued, resume };
    } else this.pause.mode = mode;
    this.pauses.push(mode);
    if (mode === "abort") {
      for (const run of this.running.values()) run.stop(ABORTED);
    }
    if (mode === "abort" || mode === "wait") {
      this.wake();
      // Returns once every in-flight call has returned.
      while (this.running.size > 0) await this.changed;
    }
    this.wake();
  }

  /** `/continue_generation`: held calls go on, and waiting calls start. */
  continueGeneration(): void {
    const paused = this.pause;
    this.pause = null;
    paused?.resume();
    this.wake();
  }

  /**
   * A weight update to `version` (kept when not a string), after aborting every running call
   * when `abortAll`; unless paused, it waits for every in-flight call (SGLang's writer lock).
   */
  async updateWeights(version: unknown, abortAll: boolean): Promise<void> {
    if (abortAll) { for (const run of this.running.values()) run.stop(ABORTED); }
    while (this.pause === null && this.running.size > 0) await this.changed;
    if (typeof version === "string") this.weightVersion = version;
    this.weightUpdates.push(this.weightVersion);
  }
}
