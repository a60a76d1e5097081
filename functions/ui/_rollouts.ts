/**
 * The viewer's rollout pages: groups, newest first, with their jobs' phases and tool turns; one
 * group's jobs with their progress, sessions and evaluation results (tests by name).
 *
 * @module
 */
import { html } from "hono/html";
import type { EvaluationResult } from "../../lib/evaluate/mod.ts";
import {
  type EpisodeReward,
  type GroupSummary,
  type JobSummary,
  PHASE_ORDER,
  type Spread,
} from "../../lib/rollout/mod.ts";
import { type Html, when } from "./_layout.ts";

const fixed = (value: number) => Number.isInteger(value) ? String(value) : value.toFixed(2);
const spreadText = (spread: Spread | null) =>
  spread === null ? "—" : `${fixed(spread.mean)} (${fixed(spread.min)}–${fixed(spread.max)})`;

/** The harness a group's settings name (stored settings, shown as text and no more). */
export function harnessOf(settings: unknown): string {
  const agent = (settings as { agent?: { harness?: unknown } } | null)?.agent;
  return typeof agent?.harness === "string" ? agent.harness.slice(0, 32) : "claude_code";
}

/** A bar of the group's jobs by phase, each part as wide as its share. */
function phaseBar(summary: GroupSummary): Html {
  const parts = PHASE_ORDER.filter((phase) => summary.phases[phase] > 0).map((phase) =>
    html`<span class="ph-${phase}" style="width:${
      (100 * summary.phases[phase] / Math.max(1, summary.jobs)).toFixed(1)
    }%" title="${phase}: ${summary.phases[phase]}"></span>`
  );
  const counts = PHASE_ORDER.filter((phase) => summary.phases[phase] > 0).map((phase) =>
    `${phase} ${summary.phases[phase]}`
  ).join(" · ");
  return html`
    <div class="phasebar">${parts}</div>
    <div class="muted phases">${counts}</div>
  `;
}

/** The groups list. */
export function groupsBody(
  groups: readonly { summary: GroupSummary; harness: string }[],
  nextCursor: string | null,
): Html {
  const rows = groups.map(({ summary, harness }) => {
    const finished = summary.phases.done + summary.phases.failed + summary.phases.aborted;
    return html`
      <tr data-group="${summary.id}">
        <td><a href="/ui/rollouts/${summary.id}">${summary.id}</a></td>
        <td>${when(summary.createdAt)}</td>
        <td>${harness}</td>
        <td class="num">${finished} / ${summary.jobs}</td>
        <td>${phaseBar(summary)}</td>
        <td class="num">${spreadText(summary.score)}</td>
        <td class="num tool-turns">${spreadText(summary.toolTurns)}</td>
      </tr>
    `;
  });
  return html`
    <h1>Rollout groups</h1>
    <table id="groups">
      <thead>
        <tr>
          <th>group</th>
          <th>created (UTC)</th>
          <th>harness</th>
          <th class="num">finished</th>
          <th>phases</th>
          <th class="num">score mean (min–max)</th>
          <th class="num">tool turns mean (min–max)</th>
        </tr>
      </thead>
      <tbody>${rows.length > 0 ? rows : html`
        <tr>
          <td colspan="7" class="muted">No rollout group yet.</td>
        </tr>
      `}</tbody>
    </table>
    ${nextCursor
      ? html`<p class="nav"><a href="/ui/rollouts?cursor=${
        encodeURIComponent(nextCursor)
      }">Next page →</a></p>`
      : ""}
  `;
}

function isEvaluation(reward: EvaluationResult | EpisodeReward): reward is EvaluationResult {
  return "applied_cleanly" in reward && "tests" in reward;
}

/** A job's reward: an evaluation's tests by name, or an environment episode's ending. */
function rewardCell(reward: EvaluationResult | EpisodeReward | null): Html {
  if (reward === null) return html`<span class="muted">—</span>`;
  if (isEvaluation(reward)) {
    const { passed, failed } = reward.tests;
    return html`<details class="evaluation"><summary><span class="badge b-${reward.reason}">${reward.reason}</span>
score ${
      reward.score ?? "none (the task's fault)"
    } · ${passed.length} passed · ${failed.length} failed</summary>
<table class="tests"><tbody>${[
      ...failed.map((name) =>
        html`
          <tr>
            <td class="flag">failed</td>
            <td class="mono">${name}</td>
          </tr>
        `
      ),
      ...passed.map((name) =>
        html`
          <tr>
            <td>passed</td>
            <td class="mono">${name}</td>
          </tr>
        `
      ),
    ]}</tbody></table>
<p class="muted">judger ${reward.judger} · applied cleanly ${String(reward.applied_cleanly)}${
      reward.tampered.length > 0 ? ` · tampered: ${reward.tampered.join(", ")}` : ""
    }${reward.detail ? ` · ${reward.detail}` : ""}</p>${
      reward.log_tail
        ? html`
          <details>
            <summary>log tail</summary>
            <pre>${reward.log_tail.slice(-4000)}</pre>
          </details>
        `
        : ""
    }</details>`;
  }
  return html`<span class="badge">${reward.status}</span> score ${reward.score} · ${reward.steps} steps · ${reward.turns} turns`;
}

/** One group: its summary and its jobs. */
export function groupBody(
  summary: GroupSummary,
  harness: string,
  jobs: readonly JobSummary[],
  toolTurns: ReadonlyMap<string, number>,
): Html {
  const rows = jobs.map((job) =>
    html`
      <tr data-job="${job.id}">
        <td class="num">${job.index}</td>
        <td class="mono">${job.id}</td>
        <td><span class="badge b-${job.phase}">${job.phase}</span>${job.reason
          ? html`
            <span class="flag">${job.reason}</span>
          `
          : ""}${job.detail ? html`<div class="muted">${job.detail.slice(0, 300)}</div>` : ""}</td>
        <td class="num">${job.attempt} / ${job.maxAttempts}</td>
        <td>${job.sessionId
          ? html`<a href="/ui/sessions/${encodeURIComponent(job.sessionId)}">${job.sessionId}</a>`
          : "—"}</td>
        <td class="num">${job.progress.turns}</td>
        <td class="num">${job.progress.tokens.toLocaleString("en")}</td>
        <td class="num">${toolTurns.get(job.id) ?? "—"}</td>
        <td class="num">${(job.progress.elapsedMs / 1000).toFixed(1)} s</td>
        <td>${rewardCell(job.result?.reward ?? null)}</td>
      </tr>
    `
  );
  return html`
    <h1>Rollout group <span class="mono">${summary.id}</span></h1>
    <p
      class="muted">created ${when(summary.createdAt)} · ${harness} · ${summary
        .jobs} jobs · score ${spreadText(summary.score)} · tool turns ${spreadText(
          summary.toolTurns,
        )}</p>
    ${phaseBar(summary)}
    <p class="nav"><a href="/rollout?group_id=${summary.id}">group as JSON (admin API)</a></p>
    <table id="jobs">
      <thead>
        <tr>
          <th class="num">#</th>
          <th>job</th>
          <th>phase</th>
          <th class="num">attempt</th>
          <th>session</th>
          <th class="num">turns</th>
          <th class="num">tokens</th>
          <th class="num">tool turns</th>
          <th class="num">elapsed</th>
          <th>reward / evaluation</th>
        </tr>
      </thead>
      <tbody>${rows}</tbody>
    </table>
  `;
}
