/**
 * A tokenizer worker of the encoder pool (`encoder_pool.ts`): it loads the served tokenizer once
 * (the gateway's faster steps and section cache included), then renders and encodes the jobs it
 * is sent, one at a time in the order they came, each watched by a guard that stops it once its
 * tokens pass the job's budget or the job's cancel flag (shared memory the pool sets) is raised.
 *
 * The protocol: `{type: "init", source}` first, answered `ready` or `failed`; then jobs
 * `{type: "job", id, kind, …, maxTokens, cancel}`, each answered `done` (text, tokens — their
 * buffer transferred — and their digits as the engine's body writes them, in shared memory),
 * `over`, `cancelled` or `error`. The job it works on it keeps in
 * the shared `running` slot the init message brings, for the pool to see without a message.
 *
 * @module
 */

// onnxruntime-web's loader inside @huggingface/transformers resolves a URL against
// `location.origin`, which a worker started from a file: URL has as "null": hide it before the
// library loads.
Object.defineProperty(globalThis, "location", { value: undefined, configurable: true });

const template = await import("./mod.ts");
const tokenizing = await import("../tokenizer/mod.ts");
const { PromptIds } = await import("../engine/mod.ts");
type Job = import("./_encoder_protocol.ts").EncodeJob;
type Reply = import("./_encoder_protocol.ts").EncodeReply;

let loading: Promise<import("../tokenizer/mod.ts").ChatTokenizer> | null = null;
/** The id of the job this worker works on, -1 for none (shared with the pool). */
let running: Int32Array<ArrayBufferLike> = new Int32Array(1);

/** This worker's scope, as a worker sees it (the type checker knows only a window's). */
const scope = self as unknown as {
  postMessage(message: unknown, transfer: Transferable[]): void;
  onmessage: (event: MessageEvent) => void;
};

const post = (reply: Reply, transfer: Transferable[] = []) => scope.postMessage(reply, transfer);

scope.onmessage = async (event: MessageEvent) => {
  const message = event.data as import("./_encoder_protocol.ts").EncoderMessage;
  if (message.type === "init") {
    running = new Int32Array(message.running);
    loading = tokenizing.loadTokenizerSource(message.source);
    try {
      await loading;
      post({ type: "ready" });
    } catch (error) {
      post({ type: "failed", message: (error as Error).message });
    }
    return;
  }
  const tokenizer = await loading!;
  Atomics.store(running, 0, message.id);
  const [reply, transfer] = run(tokenizer, message);
  // Off the job before its reply is sent: whoever has the reply sees the worker free.
  Atomics.store(running, 0, -1);
  post(reply, transfer);
};

/** Runs one job: its reply, and the buffers the reply hands over. */
function run(
  tokenizer: import("../tokenizer/mod.ts").ChatTokenizer,
  job: Job,
): [Reply, Transferable[]] {
  const shared = new Int32Array(job.cancel);
  if (Atomics.load(shared, 0) !== 0) return [{ type: "cancelled", id: job.id }, []];
  const guard: import("../tokenizer/mod.ts").EncodeGuard = new tokenizing.EncodeGuard(
    job.maxTokens,
    () => {
      Atomics.store(shared, 1, Math.min(guard.tokens, 0x7fffffff));
      return Atomics.load(shared, 0) !== 0;
    },
  );
  try {
    const rendered = job.kind === "prompt"
      ? template.renderPrompt(tokenizer, job.prompt, guard)
      : template.renderDelta(tokenizer, job.messages, job.enableThinking, guard);
    const tokens = Uint32Array.from(rendered.tokens);
    // The engine's digits written here, off the event loop (a first prompt's 12k ids take
    // ~0.2 ms to write), in shared memory (sent without a copy).
    const ascii = PromptIds.from(tokens).ascii();
    return [{
      type: "done",
      id: job.id,
      text: rendered.text,
      tokens,
      ascii,
      ...(rendered.images ? { images: rendered.images } : {}),
      ...(tokenizer.sectionStats ? { sections: tokenizer.sectionStats() } : {}),
    }, [tokens.buffer]];
  } catch (error) {
    if (error instanceof tokenizing.OverBudgetError) {
      return [{ type: "over", id: job.id, tokens: error.tokens, budget: error.budget }, []];
    }
    if (error instanceof tokenizing.EncodeCancelledError) {
      return [{ type: "cancelled", id: job.id }, []];
    }
    const { name, message } = error as Error;
    const field = (error as { field?: unknown }).field;
    return [{
      type: "error",
      id: job.id,
      name,
      message,
      ...(typeof field === "string" ? { field } : {}),
    }, []];
  }
}
