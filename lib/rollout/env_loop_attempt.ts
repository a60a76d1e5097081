/**
 * One attempt of an environment-loop job: a session, the loop played against the
 * environment with the session's token, the environment's reward attached to the session —
 * and, whatever happens, the session closed. When the environment's user simulator asks a model,
 * it does so in a session of its own, so its turns never mix with the agent's.
 *
 * @module
 */
import { jsonBytes } from "../limits/mod.ts";
import { closeSession, openSession, setReward } from "../session/mod.ts";
import { logTail } from "../evaluate/mod.ts";
import { EnvClient, EnvError, type UserModel } from "./env_client.ts";
import { type Episode, runEnvLoop } from "./env_loop.ts";
import type { EnvTask } from "./env_task.ts";
import { gatewayChat } from "./gateway_chat.ts";
import type { AgentOutcome, EpisodeReward, RolloutJobRecord } from "./records.ts";
import type { EnvLoopSettings, RolloutSettings } from "./request.ts";
import { type AttemptDeps, openAttemptSession, setAttemptPhase } from "./run_attempt.ts";
import { type AttemptOutcome, endedBy, failureReason } from "./attempt_end.ts";

/** The settings of a group whose agent is the environment loop. */
export type EnvRolloutSettings = RolloutSettings & { readonly agent: EnvLoopSettings };

/** Most bytes of the environment's `info` kept in the reward. */
export const MAX_EPISODE_INFO_BYTES = 65_536;

/** The id of the user simulator's session of an episode's session `sessionId`. */
export function userSessionId(sessionId: string): string {
  return `${sessionId}_user`;
}

/**
 * Runs attempt `job.attempt` of an environment-loop job until it ends; `signal` aborts it with
 * an `AttemptStop` reason.
 */
export async function runEnvLoopAttempt(
  deps: AttemptDeps,
  job: RolloutJobRecord,
  task: EnvTask,
  settings: EnvRolloutSettings,
  signal: AbortSignal,
): Promise<AttemptOutcome> {
  const agentSettings = settings.agent;
  const session = await openAttemptSession(deps, job, settings);
  let userSession: string | null = null;
  let episode: Episode | null = null;
  try {
    await setAttemptPhase(deps.kv, job, "agent", deps.metrics);
    const baseUrl = deps.gatewayUrl().replace(/\/+$/, "");
    const model = agentSettings.model ?? deps.modelId;
    let userModel: UserModel | null = null;
    if (agentSettings.user === "model") {
      const opened = await openSession(deps.kv, {
        id: userSessionId(session.session.id),
        metadata: {
          role: "user_simulator",
          episode_session: job.sessionId,
          group_id: job.groupId,
          rollout_job: job.id,
        },
      });
      userSession = opened.session.id;
      userModel = {
        base_url: `${baseUrl}/v1`,
        api_key: opened.token,
        model: agentSettings.user_model ?? model,
      };
    }
    episode = await runEnvLoop({
      env: new EnvClient(task.environment, {
        episodeId: job.sessionId!,
        timeoutMs: agentSettings.env_timeout_ms,
      }),
      model: gatewayChat({
        baseUrl,
        token: session.token,
        model,
        sampling: agentSettings.sampling,
      }),
      taskIndex: task.task_index,
      maxSteps: agentSettings.max_steps,
      systemPrompt: agentSettings.system_prompt ?? null,
      tools: agentSettings.tools ?? null,
      userModel,
      signal,
    });
    signal.throwIfAborted();
    const agent = agentOf(episode);
    const agentLog = logTail(episode.log.join("\n"));
    if (episode.status === "ABORTED") {
      await closeSession(deps.lifecycle, session.session.id, { as: "aborted" });
      return {
        phase: "aborted",
        reason: "model_failed",
        detail: episode.detail!,
        agent,
        agentLog,
      };
    }
    const reward = episodeReward(episode);
    await setReward(deps.lifecycle, session.session.id, reward);
    await closeSession(deps.lifecycle, session.session.id);
    return { phase: "done", agent, agentLog, patch: null, reward };
  } catch (error) {
    const agent = episode === null ? undefined : agentOf(episode);
    return await endedBy(
      deps,
      session.session.id,
      error,
      signal,
      { agent },
      (error) => error instanceof EnvError ? "env_failed" : failureReason(error),
    );
  } finally {
    if (userSession !== null) {
      await closeSession(deps.lifecycle, userSession).catch((closing) =>
        console.error(`Cannot close session ${userSession}: ${closing}`)
      );
    }
  }
}

/** The episode as the job shows its agent: the steps as its turns, the status as its result. */
function agentOf(episode: Episode): AgentOutcome {
  return { exitCode: null, timedOut: false, numTurns: episode.turns, result: episode.status };
}

/** The session's reward for an episode that ended COMPLETED or TRUNCATED. */
export function episodeReward(episode: Episode): EpisodeReward {
  const bytes = jsonBytes(episode.info);
  return {
    score: episode.reward,
    status: episode.status,
    steps: episode.steps,
    turns: episode.turns,
    info: bytes <= MAX_EPISODE_INFO_BYTES ? episode.info : { truncated: true, bytes },
  };
}
