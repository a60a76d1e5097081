/**
 * The pool of tokenizer workers that render and encode every turn's new text off the request's
 * event loop (docs/DESIGN.md §3.1): Deno `Worker`s, each holding the served tokenizer, so one
 * agent's megabytes of tool output cost the other sessions' turns nothing but a share of the CPU.
 *
 * - **Lanes.** With two workers or more, a job of more than `bulkChars` characters goes to the
 *   last worker, the bulk lane, and every other job to the least busy of the others: a small turn
 *   never queues behind a huge one. With one worker, all jobs share it.
 * - **Budget.** A job carries the most tokens the prompt can still take; the worker stops as soon
 *   as its count passes them (a batch of pieces at a time) and answers how many it counted.
 * - **Cancel.** A caller that gives up (its client left) raises the job's flag in shared memory,
 *   which the worker reads before it starts the job and between batches, and is answered at once.
 *   A worker still working on a cancelled job after `cancelGraceMs` (one enormous piece is
 *   encoded whole) is replaced, and the jobs queued behind it are sent to its replacement.
 *
 * Workers start on the first job (or {@linkcode EncoderPool.warm}); one that fails to load or
 * dies fails the jobs it held, and the next job starts another.
 *
 * @module
 */
import type { ChatMessage, ChatPrompt } from "../chat/mod.ts";
import type { CacheStats } from "../cache/mod.ts";
import { LimitError } from "../limits/mod.ts";
import { EncodeCancelledError, OverBudgetError, type TokenizerSource } from "../tokenizer/mod.ts";
import type { EncodeJob, EncodeReply } from "./_encoder_protocol.ts";
import {
  type EncodeOptions,
  messagesChars,
  promptChars,
  type PromptEncoder,
} from "./prompt_encoder.ts";
import { type Rendered, TemplateError } from "./render_delta.ts";

/** Options of {@linkcode EncoderPool}. */
export interface EncoderPoolOptions {
  /** How many workers (at least 1). */
  readonly workers: number;
  /** Jobs of more characters than this go to the bulk lane (the last worker, when there are two). */
  readonly bulkChars: number;
  /** How long a worker may hold on to a cancelled job before it is replaced, in milliseconds. */
  readonly cancelGraceMs: number;
}

/** A job sent to a worker and not answered yet. */
interface Pending {
  readonly message: EncodeJob;
  readonly flag: Int32Array;
  resolve(rendered: Rendered): void;
  reject(error: unknown): void;
  /** Its caller was answered (the result, or cancelled): a late reply is dropped. */
  settled: boolean;
}

/** One worker's place in the pool. */
interface Slot {
  worker: Worker | null;
  /** Settles once the worker has loaded the tokenizer. */
  ready: Promise<void> | null;
  /** Jobs sent to it, by id, in the order sent. */
  readonly jobs: Map<number, Pending>;
  /**
   * Shared with its worker: the id of the job it works on now, -1 for none. The worker writes it
   * as it starts and ends a job, so no message crosses for that (each costs the event loop a
   * wake-up).
   */
  running: Int32Array<SharedArrayBuffer>;
  /** Its worker's section cache as its last answer gave it (`/metrics`). */
  sections?: CacheStats;
}

/** Job ids stay positive 32-bit integers (the shared `running` slot holds one); they wrap. */
const MAX_JOB_ID = 0x7fffffff;

/** A new shared `running` slot: no job. */
function idle(): Int32Array<SharedArrayBuffer> {
  const running = new Int32Array(new SharedArrayBuffer(4));
  running[0] = -1;
  return running;
}

/**
 * The ids as a plain array: a counted loop, since `Array.from` walks a typed array through its
 * iterator (about 20 µs against 250 µs for a first turn's 12k ids, measured here).
 */
function plainIds(ids: Uint32Array): number[] {
  const out = new Array<number>(ids.length);
  for (let i = 0; i < ids.length; i++) out[i] = ids[i];
  return out;
}

/**
 * A pool of tokenizer workers for `source`.
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { defaultTokenizerPath } from "../config/mod.ts";
 * import { loadTokenizer, tokenizerSource } from "../tokenizer/mod.ts";
 * import { EncoderPool, renderDelta } from "./mod.ts";
 * const tokenizer = await loadTokenizer(defaultTokenizerPath());
 * const pool = new EncoderPool(tokenizerSource(tokenizer), {
 *   workers: 1,
 *   bulkChars: 65_536,
 *   cancelGraceMs: 1_000,
 * });
 * const messages = [{ role: "tool" as const, content: "a.txt b.txt" }];
 * const delta = await pool.renderDelta(messages, undefined);
 * assert.deepEqual(delta.tokens, renderDelta(tokenizer, messages).tokens);
 * await pool.close();
 * ```
 */
export class EncoderPool implements PromptEncoder {
  readonly #source: TokenizerSource;
  readonly #options: EncoderPoolOptions;
  readonly #slots: Slot[];
  #nextId = 0;
  #closed = false;
  #started = 0;
  #replaced = 0;

  constructor(source: TokenizerSource, options: EncoderPoolOptions) {
    if (!Number.isInteger(options.workers) || options.workers < 1) {
      throw new RangeError(`An encoder pool needs at least one worker, not ${options.workers}`);
    }
    this.#source = source;
    this.#options = options;
    this.#slots = Array.from({ length: options.workers }, () => ({
      worker: null,
      ready: null,
      jobs: new Map(),
      running: idle(),
    }));
  }

  /** Starts every worker now rather than on its first job; resolves once all are ready. */
  async warm(): Promise<void> {
    await Promise.all(this.#slots.map((slot) => this.#start(slot)));
  }

  /** Jobs sent and not answered, by worker (for tests and the bench). */
  pending(): number[] {
    return this.#slots.map((slot) => slot.jobs.size);
  }

  /** The job each worker works on now (`null`: none), for tests. */
  running(): (number | null)[] {
    return this.#slots.map((slot) => runningJob(slot));
  }

  /** The tokens each worker's running job has counted so far (`null`: none running), for tests. */
  progress(): (number | null)[] {
    return this.#slots.map((slot) => {
      const id = runningJob(slot);
      const pending = id === null ? undefined : slot.jobs.get(id);
      return pending ? Atomics.load(pending.flag, 1) : null;
    });
  }

  /** Workers started, and those replaced for holding on to a cancelled job. */
  stats(): { started: number; replaced: number } {
    return { started: this.#started, replaced: this.#replaced };
  }

  /**
   * The workers' section caches together, as each last said (with each job's answer): bytes and
   * characters held, capacity, hits and misses summed.
   */
  sectionStats(): CacheStats {
    const sum = { held: 0, capacity: 0, bytes: 0, hits: 0, misses: 0 };
    for (const slot of this.#slots) {
      if (!slot.sections) continue;
      for (const key of Object.keys(sum) as (keyof CacheStats)[]) sum[key] += slot.sections[key];
    }
    return sum;
  }

  renderPrompt(prompt: ChatPrompt, options: EncodeOptions = {}): Promise<Rendered> {
    return this.#submit({ kind: "prompt", prompt }, promptChars(prompt), options);
  }

  renderDelta(
    messages: readonly ChatMessage[],
    enableThinking: boolean | undefined,
    options: EncodeOptions = {},
  ): Promise<Rendered> {
    return this.#submit(
      { kind: "delta", messages, enableThinking },
      messagesChars(messages),
      options,
    );
  }

  async close(): Promise<void> {
    this.#closed = true;
    for (const slot of this.#slots) this.#stop(slot, new Error("The encoder pool was closed"));
    await Promise.resolve();
  }

  #submit(
    job: { kind: "prompt"; prompt: ChatPrompt } | {
      kind: "delta";
      messages: readonly ChatMessage[];
      enableThinking: boolean | undefined;
    },
    chars: number,
    options: EncodeOptions,
  ): Promise<Rendered> {
    if (this.#closed) return Promise.reject(new Error("The encoder pool is closed"));
    const { signal } = options;
    if (signal?.aborted) return Promise.reject(new EncodeCancelledError());
    const cancel = new SharedArrayBuffer(8);
    const message = {
      ...job,
      type: "job",
      id: this.#nextId,
      maxTokens: options.maxTokens ?? Infinity,
      cancel,
    } as EncodeJob;
    this.#nextId = this.#nextId === MAX_JOB_ID ? 0 : this.#nextId + 1;
    const slot = this.#lane(chars);
    return new Promise<Rendered>((resolve, reject) => {
      const pending: Pending = {
        message,
        flag: new Int32Array(cancel),
        resolve,
        reject,
        settled: false,
      };
      const onAbort = () => this.#cancel(slot, pending);
      signal?.addEventListener("abort", onAbort, { once: true });
      const done = () => signal?.removeEventListener("abort", onAbort);
      pending.resolve = (rendered) => {
        done();
        resolve(rendered);
      };
      pending.reject = (error) => {
        done();
        reject(error);
      };
      this.#send(slot, pending);
    });
  }

  /** The worker a job of `chars` characters goes to. */
  #lane(chars: number): Slot {
    const slots = this.#slots;
    if (slots.length === 1) return slots[0];
    if (chars > this.#options.bulkChars) return slots[slots.length - 1];
    let best = slots[0];
    for (let i = 1; i < slots.length - 1; i++) {
      if (slots[i].jobs.size < best.jobs.size) best = slots[i];
    }
    return best;
  }

  /** Sends `pending` to `slot`'s worker once it is ready. */
  #send(slot: Slot, pending: Pending): void {
    slot.jobs.set(pending.message.id, pending);
    const ready = this.#start(slot);
    const worker = slot.worker!;
    ready.then(
      () => {
        // Sent unless the worker was replaced meanwhile (its replacement sends it).
        if (slot.worker === worker && slot.jobs.has(pending.message.id)) {
          worker.postMessage(pending.message);
        }
      },
      () => {}, // the start's failure fails the slot's jobs
    );
  }

  /** The slot's worker, started (and loading its tokenizer) if it has none. */
  #start(slot: Slot): Promise<void> {
    if (slot.worker && slot.ready) return slot.ready;
    const worker = new Worker(new URL("./_encoder_worker.ts", import.meta.url).href, {
      type: "module",
    });
    slot.worker = worker;
    slot.running = idle();
    this.#started++;
    slot.ready = new Promise<void>((resolve, reject) => {
      worker.onmessage = (event: MessageEvent<EncodeReply>) => {
        const reply = event.data;
        if (reply.type === "ready") resolve();
        else if (reply.type === "failed") {
          const error = new Error(`A tokenizer worker could not load: ${reply.message}`);
          reject(error);
          this.#stop(slot, error);
        } else this.#answer(slot, reply);
      };
      worker.onerror = (event: ErrorEvent) => {
        event.preventDefault();
        const error = new Error(`A tokenizer worker stopped: ${event.message}`);
        reject(error);
        this.#stop(slot, error);
      };
    });
    slot.ready.catch(() => {});
    worker.postMessage({ type: "init", source: this.#source, running: slot.running.buffer });
    return slot.ready;
  }

  /** A worker's word on a job. */
  #answer(slot: Slot, reply: Exclude<EncodeReply, { type: "ready" | "failed" }>): void {
    if (reply.type === "done" && reply.sections) slot.sections = reply.sections;
    const pending = slot.jobs.get(reply.id);
    if (!pending) return;
    slot.jobs.delete(reply.id);
    if (pending.settled) return;
    pending.settled = true;
    switch (reply.type) {
      case "done":
        return pending.resolve({
          text: reply.text,
          tokens: plainIds(reply.tokens),
          ascii: reply.ascii,
          ...(reply.images ? { images: reply.images } : {}),
        });
      case "over":
        return pending.reject(new OverBudgetError(reply.tokens, reply.budget));
      case "cancelled":
        return pending.reject(new EncodeCancelledError());
      case "error":
        return pending.reject(workerError(reply));
    }
  }

  /**
   * Cancels `pending`: its caller is answered at once and the worker told (a job it has not
   * started it skips); a worker still working on it after the grace period is replaced.
   */
  #cancel(slot: Slot, pending: Pending): void {
    Atomics.store(pending.flag, 0, 1);
    if (!pending.settled) {
      pending.settled = true;
      pending.reject(new EncodeCancelledError());
    }
    const worker = slot.worker;
    const timer = setTimeout(() => {
      if (slot.worker === worker && runningJob(slot) === pending.message.id) this.#replace(slot);
    }, this.#options.cancelGraceMs);
    Deno.unrefTimer(timer);
  }

  /** Replaces the slot's worker; the live jobs it held go to the new one. */
  #replace(slot: Slot): void {
    this.#replaced++;
    const jobs = [...slot.jobs.values()].filter((pending) => !pending.settled);
    slot.worker?.terminate();
    slot.worker = null;
    slot.ready = null;
    slot.running = idle(); // the stopped worker's last word on it is void
    slot.sections = undefined;
    slot.jobs.clear();
    if (this.#closed) return;
    for (const pending of jobs) this.#send(slot, pending);
  }

  /** Stops the slot's worker and fails the jobs it held with `error`. */
  #stop(slot: Slot, error: Error): void {
    slot.worker?.terminate();
    slot.worker = null;
    slot.ready = null;
    slot.running = idle(); // the stopped worker's last word on it is void
    const jobs = [...slot.jobs.values()];
    slot.jobs.clear();
    for (const pending of jobs) {
      if (pending.settled) continue;
      pending.settled = true;
      pending.reject(error);
    }
  }
}

/** The error a worker reported, as the caller's code expects it. */
function workerError(reply: Extract<EncodeReply, { type: "error" }>): Error {
  if (reply.name === "TemplateError") return new TemplateError(reply.message);
  if (reply.name === "LimitError" && reply.field !== undefined) {
    // LimitError's message is `${field}: ${detail}`.
    return new LimitError(reply.field, reply.message.slice(reply.field.length + 2));
  }
  const error = new Error(reply.message);
  error.name = reply.name;
  return error;
}

/** The id of the job `slot`'s worker works on now, `null` for none. */
function runningJob(slot: Slot): number | null {
  const id = Atomics.load(slot.running, 0);
  return id < 0 ? null : id;
}
