/**
 * The environment loop: the gateway plays an agent against a tool environment (slime's
 * tau-bench agent, run here). The environment resets to a task; the model answers with tool
 * calls, each played as a step whose observation comes back as the tool's result, or with
 * text, played as the `respond` action whose observation is the user's reply. The episode ends
 * COMPLETED when the environment says it is done, TRUNCATED after `max_steps` steps, ABORTED
 * when the model cannot answer a turn; the reward is the environment's last.
 *
 * Nothing is re-rendered here: each turn goes to the gateway with the history as it was
 * answered, and the gateway records the tokens it sampled.
 *
 * @module
 */
import type { EnvAction, EnvClient, UserModel } from "./env_client.ts";
import { RESPOND_ACTION } from "./env_client.ts";
import type { ChatMessage, ChatModel } from "./gateway_chat.ts";
import { ModelError } from "./gateway_chat.ts";

/** How an episode ended (slime's sample statuses). */
export type EpisodeStatus = "COMPLETED" | "TRUNCATED" | "ABORTED";

/** An episode as it ended. */
export interface Episode {
  readonly status: EpisodeStatus;
  /** The environment's last reward (0 before any step). */
  readonly reward: number;
  /** Steps played (tool calls and replies to the user). */
  readonly steps: number;
  /** Model turns. */
  readonly turns: number;
  /** The environment's last `info`. */
  readonly info: Record<string, unknown>;
  /** Why it was aborted; `null` otherwise. */
  readonly detail: string | null;
  /** One line per turn and step, for people reading the job. */
  readonly log: readonly string[];
}

/** What the loop plays. */
export interface EnvLoopRun {
  readonly env: EnvClient;
  readonly model: ChatModel;
  readonly taskIndex: number;
  readonly maxSteps: number;
  /** The system prompt; the environment's `wiki` when `null`. */
  readonly systemPrompt: string | null;
  /** The tools; the environment's when `null`. */
  readonly tools: readonly unknown[] | null;
  /** Given to the environment's user simulator at reset; `null`: the environment's own user. */
  readonly userModel: UserModel | null;
  readonly signal?: AbortSignal;
}

/** Characters of an observation or an argument list quoted in the log. */
const LOG_QUOTE_CHARS = 200;

/**
 * Plays one episode.
 *
 * @throws {EnvError} when the environment fails (the episode has no reward to give).
 */
export async function runEnvLoop(run: EnvLoopRun): Promise<Episode> {
  const { env, model, signal } = run;
  const reset = await env.reset(run.taskIndex, run.userModel, signal);
  const tools = run.tools ?? reset.tools ?? [];
  const system = run.systemPrompt ?? reset.wiki ?? null;
  const messages: ChatMessage[] = [
    ...(system === null ? [] : [{ role: "system", content: system }]),
    { role: "user", content: reset.observation },
  ];
  const log = [`reset task ${run.taskIndex}: ${quote(reset.observation)}`];
  let reward = 0;
  let info = reset.info;
  let steps = 0;
  let turns = 0;
  const end = (status: EpisodeStatus, detail: string | null = null): Episode => ({
    status,
    reward,
    steps,
    turns,
    info,
    detail,
    log,
  });
  while (steps < run.maxSteps) {
    let reply;
    try {
      reply = await model.complete(messages, tools, signal);
    } catch (error) {
      if (!(error instanceof ModelError)) throw error;
      log.push(`turn ${turns + 1}: the model failed: ${error.message}`);
      return end("ABORTED", `Turn ${turns + 1} failed (HTTP ${error.status}): ${error.message}`);
    }
    turns++;
    messages.push(reply.message);
    const plays = reply.toolCalls.length > 0
      ? reply.toolCalls.map((call) => ({ call, action: toolAction(call.function) }))
      : [{ call: null, action: { name: RESPOND_ACTION, kwargs: { content: reply.content } } }];
    for (const { call, action } of plays) {
      if (steps >= run.maxSteps) break;
      steps++;
      if (typeof action === "string") {
        // Arguments that are not an object never reach the environment; the model is told.
        messages.push({ role: "tool", tool_call_id: call!.id, content: action });
        log.push(`step ${steps}: ${call!.function.name}: ${action}`);
        continue;
      }
      const step = await env.step(action, signal);
      reward = step.reward;
      info = step.info;
      messages.push(
        call === null
          ? { role: "user", content: step.observation }
          : { role: "tool", tool_call_id: call.id, content: step.observation },
      );
      log.push(
        `step ${steps}: ${action.name} ${quote(JSON.stringify(action.kwargs))} → ` +
          `${quote(step.observation)} (reward ${step.reward}${step.done ? ", done" : ""})`,
      );
      if (step.done) return end("COMPLETED");
    }
  }
  return end("TRUNCATED");
}

/** A tool call as an action, or why it cannot be one. */
function toolAction(fn: { name: string; arguments: string }): EnvAction | string {
  let kwargs: unknown;
  try {
    kwargs = fn.arguments.trim() === "" ? {} : JSON.parse(fn.arguments);
  } catch {
    return `Error: the arguments of ${fn.name} are not JSON`;
  }
  if (kwargs === null || typeof kwargs !== "object" || Array.isArray(kwargs)) {
    return `Error: the arguments of ${fn.name} are not a JSON object`;
  }
  return { name: fn.name, kwargs: kwargs as Record<string, unknown> };
}

function quote(text: string): string {
  const line = text.replaceAll("\n", " ");
  return line.length > LOG_QUOTE_CHARS ? `${line.slice(0, LOG_QUOTE_CHARS)}…` : line;
}
