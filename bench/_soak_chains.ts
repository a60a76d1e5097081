/**
 * The soak's end check of every episode against what was recorded, read through the trainer API
 * (`GET /sessions/:id/samples?format=raw`) and held against the engine's ledger:
 *
 * - **lost**: a reply the agent accepted (HTTP 200, whole stream) whose turn is not in the
 *   session's live chain;
 * - **unacknowledged**: a live turn the agent never accepted (a reply nobody received);
 * - **false fork**: a session that is not exactly one chain, never wiped, with no turn discarded
 *   by a rewind, whose live turns are the accepted replies in order — every request of an
 *   episode extended the previous one, so anything else split what was one conversation;
 * - **inexact**: a live turn whose prompt is not the chain so far as the engine received it (T2),
 *   or whose output or logprobs are not the ones the engine sampled, across resumed aborts (T1).
 *
 * @module
 */
import { scriptedLogprob } from "../lib/scripted_engine/mod.ts";
import type { RawRecord } from "../lib/segment/mod.ts";
import type { Episode } from "./_soak_client.ts";
import type { AnsweredCall, SoakEngine } from "./_soak_engine.ts";
import { TokenHash } from "./_token_hash.ts";

/** Sessions checked at once. */
const CONCURRENCY = 4;

/** A turn as the raw export shows it (the fields the check reads). */
export type RawTurn = Pick<
  RawRecord["chains"][number]["turns"][number],
  "rid" | "index" | "input_len" | "aborts" | "discarded" | "tokens"
>;

/** A chain as the raw export shows it. */
export interface RawChain {
  readonly id: string;
  readonly wiped_at: number | null;
  readonly turns: RawTurn[];
}

/** What the check found. */
export interface ChainCheck {
  readonly sessions: number;
  /** Live turns recorded in the episodes' sessions. */
  turns: number;
  /** Engine-side aborts the recorded turns resumed. */
  aborts: number;
  /** Tokens of every episode's last prompt, summed; and the largest. */
  promptTokens: number;
  largestPrompt: number;
  lost: number;
  unacknowledged: number;
  falseForks: number;
  inexact: number;
  /** The first problems, described. */
  readonly problems: string[];
}

/** Checks every episode's session through the trainer API of `url`. */
export async function checkChains(
  url: string,
  adminToken: string,
  episodes: readonly Episode[],
  engine: Pick<SoakEngine, "answered" | "answeredWithPrompt">,
): Promise<ChainCheck> {
  const check: ChainCheck = {
    sessions: episodes.length,
    turns: 0,
    aborts: 0,
    promptTokens: 0,
    largestPrompt: 0,
    lost: 0,
    unacknowledged: 0,
    falseForks: 0,
    inexact: 0,
    problems: [],
  };
  const note = (problem: string) => check.problems.length < 20 && check.problems.push(problem);
  let next = 0;
  const worker = async () => {
    while (next < episodes.length) {
      const episode = episodes[next++];
      const response = await fetch(`${url}/sessions/${episode.id}/samples?format=raw`, {
        headers: { authorization: `Bearer ${adminToken}` },
      });
      if (!response.ok) {
        check.falseForks++;
        note(`${episode.id}: raw export answered ${response.status}: ${await response.text()}`);
        continue;
      }
      const raw = await response.json() as { chains: RawChain[] };
      checkEpisode(episode, raw.chains, engine, check, note);
    }
  };
  await Promise.all(Array.from({ length: CONCURRENCY }, worker));
  return check;
}

function checkEpisode(
  episode: Episode,
  chains: readonly RawChain[],
  engine: Pick<SoakEngine, "answered" | "answeredWithPrompt">,
  check: ChainCheck,
  note: (problem: string) => void,
) {
  const live = chains.flatMap((chain) => chain.turns.filter((turn) => !turn.discarded))
    .sort((a, b) => a.index - b.index);
  check.turns += live.length;
  const recorded = new Set(live.map((turn) => turn.rid));
  const accepted = new Set(episode.rids);
  const lost = episode.rids.filter((rid) => !recorded.has(rid));
  const unacknowledged = live.filter((turn) => !accepted.has(turn.rid));
  check.lost += lost.length;
  check.unacknowledged += unacknowledged.length;
  if (lost.length > 0) note(`${episode.id}: accepted replies not recorded: ${lost.join(", ")}`);
  if (unacknowledged.length > 0) {
    note(`${episode.id}: recorded turns never accepted: ${unacknowledged.map((t) => t.rid)}`);
  }
  const discarded = chains.flatMap((chain) => chain.turns.filter((turn) => turn.discarded));
  const forked = chains.length > 1 || chains.some((chain) => chain.wiped_at !== null) ||
    discarded.length > 0 || live.map((turn) => turn.rid).join() !== episode.rids.join();
  if (episode.rids.length > 0 || chains.length > 0) {
    if (forked || chains.length !== 1) {
      check.falseForks++;
      note(
        `${episode.id}: ${chains.length} chains, ${discarded.length} discarded turns, live ${
          live.map((turn) => turn.rid)
        } vs accepted ${episode.rids}`,
      );
    }
  }
  if (chains.length === 1) {
    for (const problem of inexactTurns(chains[0], engine)) {
      check.inexact++;
      note(`${episode.id}: ${problem}`);
    }
  }
  check.aborts += live.reduce((sum, turn) => sum + turn.aborts, 0);
  const prompt = live.at(-1)?.input_len ?? 0;
  check.promptTokens += prompt;
  check.largestPrompt = Math.max(check.largestPrompt, prompt);
}

/** Problems of the chain's live turns against the engine's ledger, one line each. */
export function inexactTurns(
  chain: RawChain,
  engine: Pick<SoakEngine, "answered" | "answeredWithPrompt">,
): string[] {
  const problems: string[] = [];
  const prefix = new TokenHash();
  const live = chain.turns.filter((turn) => !turn.discarded).sort((a, b) => a.index - b.index);
  for (const turn of live) {
    const label = `turn ${turn.index} (${turn.rid})`;
    prefix.update(turn.tokens.delta);
    if (turn.input_len !== prefix.length) {
      problems.push(`${label}: input_len ${turn.input_len}, chain so far ${prefix.length}`);
    }
    let call = engine.answered(turn.rid);
    if (!call) {
      problems.push(`${label}: the engine answered no call with this rid`);
    } else if (call.promptDigest !== prefix.digest()) {
      problems.push(`${label}: the engine's prompt is not the chain so far (T2)`);
    } else {
      const { output, logprobs } = turn.tokens;
      let at = 0;
      let aborts = 0;
      while (call) {
        const part = output.slice(at, at + call.outputLength);
        if (new TokenHash().update(part).digest() !== call.outputDigest) {
          problems.push(`${label}: output ${at}… is not what call ${call.rid} sampled (T1)`);
          break;
        }
        if (part.some((token, i) => logprobs[at + i] !== scriptedLogprob(token, i))) {
          problems.push(`${label}: logprobs ${at}… are not call ${call.rid}'s (T1)`);
          break;
        }
        at += part.length;
        if (call.finish !== "abort") break;
        aborts++;
        call = resumeOf(
          call,
          prefix.clone().update(output.slice(0, at)).digest(),
          output,
          at,
          engine,
        );
        if (!call) problems.push(`${label}: no call resumed the abort after ${at} tokens`);
      }
      if (call && at !== output.length) {
        problems.push(`${label}: ${output.length} output tokens, the engine sampled ${at}`);
      }
      if (call && aborts !== turn.aborts) {
        problems.push(`${label}: ${turn.aborts} aborts recorded, the engine played ${aborts}`);
      }
    }
    prefix.update(turn.tokens.output).update(turn.tokens.closing);
  }
  return problems;
}

/** The call that resumed `aborted`: its prompt was the chain plus the partial output. */
function resumeOf(
  aborted: AnsweredCall,
  digest: string,
  output: readonly number[],
  at: number,
  engine: Pick<SoakEngine, "answeredWithPrompt">,
): AnsweredCall | undefined {
  return engine.answeredWithPrompt(digest).find((call) =>
    call.receivedAt >= aborted.receivedAt &&
    new TokenHash().update(output.slice(at, at + call.outputLength)).digest() ===
      call.outputDigest
  );
}
