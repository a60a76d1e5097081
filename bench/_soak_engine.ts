/**
 * The soak's engine: the scripted engine (SGLang's wire protocol) answering with replies shaped
 * like a coding agent's (thinking, then one or two tool calls, sometimes a final text), playing
 * faults on a share of its calls, and keeping a ledger of what it answered so the recorded
 * chains can be checked against it at the end.
 *
 * @module
 */
import { type EngineCall, type Fault, startScriptedEngine } from "../lib/scripted_engine/mod.ts";
import type { ChatTokenizer } from "../lib/tokenizer/mod.ts";
import type { Random } from "./_random.ts";
import { TokenHash } from "./_token_hash.ts";

/** The faults the soak injects. */
export type FaultKind = "unavailable" | "hang" | "drop" | "slow" | "abort";

/** Every fault kind, in the order a soak's first calls play them. */
const KINDS: readonly FaultKind[] = ["unavailable", "hang", "drop", "slow", "abort"];

/** The share of engine calls (0–1) that play each fault. */
export type FaultMix = Readonly<Record<FaultKind, number>>;

/**
 * About one call in seven goes wrong: 503s, hangs until the gateway's timeout, connections
 * dropped mid-body, slow generations, and engine-side aborts (a weight update) to be resumed.
 */
export const DEFAULT_FAULTS: FaultMix = {
  unavailable: 0.02,
  hang: 0.005,
  drop: 0.02,
  slow: 0.05,
  abort: 0.04,
};

/** A call the engine answered with tokens, as the ledger keeps it. */
export interface AnsweredCall {
  readonly rid: string;
  /** When the engine received it (`Date.now()`). */
  readonly receivedAt: number;
  /** {@linkcode TokenHash} digest of its `input_ids`. */
  readonly promptDigest: string;
  readonly outputLength: number;
  /** {@linkcode TokenHash} digest of its `output_ids`. */
  readonly outputDigest: string;
  /** `finish_reason.type`: `stop`, `length`, or `abort` (the gateway resumes those). */
  readonly finish: string;
}

/** A running soak engine. */
export interface SoakEngine {
  readonly url: string;
  /** Faults played so far, by kind. */
  readonly injected: Readonly<Record<FaultKind, number>>;
  /** Calls received so far. */
  calls(): number;
  /** The answered call with this rid. */
  answered(rid: string): AnsweredCall | undefined;
  /** Answered calls whose prompt had this digest, in arrival order. */
  answeredWithPrompt(digest: string): readonly AnsweredCall[];
  /** Turns fault injection on or off (off while the soak drains). */
  setFaulting(on: boolean): void;
  close(): Promise<void>;
}

/** Options of {@linkcode startSoakEngine}. */
export interface SoakEngineOptions {
  readonly tokenizer: ChatTokenizer;
  readonly random: Random;
  readonly faults: FaultMix;
}

/** Starts the soak engine on 127.0.0.1. */
export async function startSoakEngine(options: SoakEngineOptions): Promise<SoakEngine> {
  const { tokenizer, random, faults } = options;
  const replies = agentReplies(tokenizer, random);
  const injected: Record<FaultKind, number> = {
    unavailable: 0,
    hang: 0,
    drop: 0,
    slow: 0,
    abort: 0,
  };
  /** Per call in progress: its prompt digest, and the whole reply it is giving. */
  const inProgress = new Map<string, { digest: string; reply?: number[] }>();
  /** The rest of an aborted reply, by the digest of the prompt that resumes it. */
  const resumable = new Map<string, number[]>();
  const byRid = new Map<string, AnsweredCall>();
  const byPrompt = new Map<string, AnsweredCall[]>();
  let received = 0;
  let faulting = true;
  let weights = 0;

  const chooseFault = (call: EngineCall): Fault | undefined => {
    received++;
    const digest = new TokenHash().update(call.inputIds).digest();
    inProgress.set(call.rid, { digest });
    if (!faulting) return undefined;
    // The first calls play one fault of each kind, so that even a short soak meets them all.
    const kind = received <= KINDS.length ? KINDS[received - 1] : draw();
    // A resumed call is not aborted again: its reply's rest may be shorter than the cut.
    if (!kind || (kind === "abort" && resumable.has(digest))) return undefined;
    injected[kind]++;
    // Calls that will not be answered leave no state behind.
    if (kind === "unavailable" || kind === "drop") inProgress.delete(call.rid);
    if (kind === "unavailable" || kind === "hang") return { kind };
    if (kind === "drop") return { kind, afterMs: random.between(20, 1500) };
    if (kind === "slow") return { kind, latencyMs: random.between(2, 8) };
    return { kind, after: random.between(1, 12), weightVersion: `w${++weights}` };
  };

  /** A fault drawn by the mix, or none. */
  const draw = (): FaultKind | undefined => {
    let roll = random.next();
    return KINDS.find((kind) => (roll -= faults[kind]) < 0);
  };

  const engine = await startScriptedEngine({
    tokenizer,
    keepLog: false,
    faultFor: chooseFault,
    script: (call) => {
      const state = inProgress.get(call.rid);
      const rest = state && resumable.get(state.digest);
      if (state && rest) resumable.delete(state.digest);
      const reply = rest ?? random.pick(replies);
      if (state) state.reply = reply;
      return { tokens: reply, eos: false };
    },
    onAnswer: (call, finish) => {
      const state = inProgress.get(call.rid);
      inProgress.delete(call.rid);
      const output = call.output ?? [];
      const prompt = new TokenHash().update(call.inputIds);
      const answered: AnsweredCall = {
        rid: call.rid,
        receivedAt: call.receivedAt,
        promptDigest: state?.digest ?? prompt.digest(),
        outputLength: output.length,
        outputDigest: new TokenHash().update(output).digest(),
        finish,
      };
      byRid.set(call.rid, answered);
      const same = byPrompt.get(answered.promptDigest) ?? [];
      same.push(answered);
      byPrompt.set(answered.promptDigest, same);
      const rest = state?.reply?.slice(output.length);
      if (finish === "abort" && rest && rest.length > 0) {
        resumable.set(prompt.update(output).digest(), rest);
      }
    },
  });

  return {
    url: engine.url,
    injected,
    calls: () => received,
    answered: (rid) => byRid.get(rid),
    answeredWithPrompt: (digest) => byPrompt.get(digest) ?? [],
    setFaulting: (on) => void (faulting = on),
    close: () => engine.close(),
  };
}

const WORDS = (
  "the test fails because the parser reads the header before the body so the fix is to move " +
  "the check after the loop and keep the old path for callers that pass a buffer then run the " +
  "suite again and look at the diff of the module its imports and the fixture that covers it"
).split(" ");

/** A reply's tokens, end-of-turn included: thinking, then tool calls or a final text. */
function agentReplies(tokenizer: ChatTokenizer, random: Random): number[][] {
  const think = () =>
    Array.from({ length: random.between(12, 160) }, () => random.pick(WORDS)).join(" ");
  const path = () => `src/${random.pick(WORDS)}_${random.between(1, 99)}.ts`;
  const calls = [
    () => ({ name: "Bash", arguments: { command: `deno test ${path()}`, description: "Run it" } }),
    () => ({ name: "Read", arguments: { file_path: `/tmp/soak-repo/${path()}` } }),
    () => ({
      name: "Edit",
      arguments: {
        file_path: `/tmp/soak-repo/${path()}`,
        old_string: `const ${random.pick(WORDS)} = read();`,
        new_string: `const ${random.pick(WORDS)} = await read();`,
      },
    }),
    () => ({
      name: "Write",
      arguments: {
        file_path: `/tmp/soak-repo/${path()}`,
        content: `export const x = ${think()};\n`,
      },
    }),
  ];
  const toolCall = () => `<tool_call>\n${JSON.stringify(random.pick(calls)())}\n</tool_call>`;
  const texts: string[] = [];
  for (let i = 0; i < 48; i++) {
    const roll = random.next();
    const body = roll < 0.1
      ? `Done: ${think()}.`
      : roll < 0.3
      ? `${toolCall()}\n${toolCall()}`
      : toolCall();
    texts.push(random.next() < 0.8 ? `<think>\n${think()}.\n</think>\n\n${body}` : body);
  }
  return texts.map((text) => [...tokenizer.encode(text), tokenizer.eosId]);
}
