/**
 * The viewer's session pages: the list with its filters, and one session's chains as a tree, a
 * swimlane timeline and turn tables with their flags.
 *
 * @module
 */
import { html } from "hono/html";
import type { ChainHeader, TurnRecord } from "../../lib/chain/mod.ts";
import type { ChainSummary, SessionSummary, TimelineTurn } from "../../lib/session/mod.ts";
import { type Html, shortJson, when } from "./_layout.ts";

/** The list filters as the form shows them back. */
export interface ListFilters {
  readonly status?: "open" | "closed";
  readonly meta: readonly string[];
  readonly rewardMin?: number;
  readonly rewardMax?: number;
  readonly limit: number;
}

const sum = (chains: readonly ChainSummary[], pick: (chain: ChainSummary) => number) =>
  chains.reduce((total, chain) => total + pick(chain), 0);

/** The sessions list: filters, one row per session, the next page's link. */
export function sessionsBody(
  sessions: readonly SessionSummary[],
  filters: ListFilters,
  nextCursor: string | null,
): Html {
  const next = new URLSearchParams();
  if (filters.status) next.set("status", filters.status);
  for (const pair of filters.meta) next.append("meta", pair);
  if (filters.rewardMin !== undefined) next.set("reward_min", String(filters.rewardMin));
  if (filters.rewardMax !== undefined) next.set("reward_max", String(filters.rewardMax));
  next.set("limit", String(filters.limit));
  if (nextCursor) next.set("cursor", nextCursor);
  const rows = sessions.map((session) =>
    html`<tr data-session="${session.id}">
  <td><a href="/ui/sessions/${encodeURIComponent(session.id)}">${session.id}</a></td>
  <td><span class="badge b-${session.status}">${session.status}</span>${
      session.closedAs
        ? html`
          <span class="badge b-${session.closedAs}">${session.closedAs}</span>
        `
        : ""
    }</td>
  <td>${when(session.createdAt)}</td>
  <td class="num">${session.chains.length}</td>
  <td class="num">${sum(session.chains, (chain) => chain.turns)}</td>
  <td class="num">${sum(session.chains, (chain) => chain.tokens).toLocaleString("en")}</td>
  <td class="num">${session.reward ? session.reward.score : "—"}</td>
  <td class="mono">${shortJson(session.metadata)}</td>
</tr>`
  );
  return html`
    <h1>Sessions</h1>
    <form class="filters" method="get" action="/ui">
      <label>status <select name="status">
        <option value="" ${filters.status === undefined ? "selected" : ""}>any</option>
        <option value="open" ${filters.status === "open" ? "selected" : ""}>open</option>
        <option value="closed" ${filters.status === "closed" ? "selected" : ""}>closed</option>
      </select></label>
      <label>metadata (key=value) <input name="meta" value="${filters.meta[0] ??
        ""}" placeholder="task=fizzbuzz"></label>
      <label>reward ≥ <input name="reward_min" size="6" value="${filters.rewardMin ?? ""}"></label>
      <label>reward ≤ <input name="reward_max" size="6" value="${filters.rewardMax ?? ""}"></label>
      <label>per page <input name="limit" size="4" value="${filters.limit}"></label>
      <button type="submit">Filter</button>
    </form>
    <table id="sessions">
      <thead>
        <tr>
          <th>id</th>
          <th>status</th>
          <th>created (UTC)</th>
          <th class="num">chains</th>
          <th class="num">turns</th>
          <th class="num">tokens</th>
          <th class="num">reward</th>
          <th>metadata</th>
        </tr>
      </thead>
      <tbody>${rows.length > 0 ? rows : html`
        <tr>
          <td colspan="8" class="muted">No session matches.</td>
        </tr>
      `}</tbody>
    </table>
    ${nextCursor ? html`<p class="nav"><a href="/ui?${next.toString()}">Next page →</a></p>` : ""}
  `;
}

/** The flags a turn shows: its recorded flags, how it ended, how it was routed, its replays. */
export function turnFlags(turn: TimelineTurn): string[] {
  const { record } = turn;
  const flags = [...record.flags];
  if (record.finishReason === "length") flags.push("truncated");
  if (record.aborts > 0 && !flags.includes("engine_aborted")) flags.push("engine_aborted");
  if (record.route === "realign") flags.push("realigned");
  if (record.route === "rewind" || record.route === "wipe") flags.push(record.route);
  if (turn.replays > 0) flags.push(`replayed×${turn.replays}`);
  // Taken off its chain by a later rewind (or realign): never trained on.
  if (turn.discarded) flags.push("rewound");
  return flags;
}

/** One session: its facts, its chain tree, its timeline and its turns. */
export function sessionBody(
  session: SessionSummary,
  timeline: readonly { header: ChainHeader; turns: TimelineTurn[] }[],
): Html {
  const base = `/ui/sessions/${encodeURIComponent(session.id)}`;
  return html`
    <h1>Session <span class="mono">${session.id}</span></h1>
    <table class="facts" style="width:auto">
      <tbody>
        <tr>
          <th>status</th>
          <td><span class="badge b-${session.status}">${session
            .status}</span> ${session.closedAs ?? ""}</td>
        </tr>
        <tr>
          <th>created</th>
          <td>${when(session.createdAt)}</td>
        </tr>
        <tr>
          <th>closed</th>
          <td>${when(session.closedAt)}</td>
        </tr>
        <tr>
          <th>expires</th>
          <td>${when(session.expiresAt)}</td>
        </tr>
        <tr>
          <th>reward</th>
          <td class="mono" id="reward">${session.reward ? shortJson(session.reward, 600) : "—"}</td>
        </tr>
        <tr>
          <th>metadata</th>
          <td class="mono">${shortJson(session.metadata, 600)}</td>
        </tr>
      </tbody>
    </table>
    <p class="nav"><a href="/sessions/${encodeURIComponent(
      session.id,
    )}/samples">samples (JSON, admin API)</a></p>
    <h2>Chains</h2>
    ${chainTree(session, base)}
    <h2>Timeline</h2>
    ${swimlanes(timeline, base)}
    <h2>Turns</h2>
    ${timeline.map(({ header, turns }) => turnTable(header, turns, base))}
  `;
}

/** The chains as a tree: sub-agents under the chain that dispatched them, wipes under theirs. */
function chainTree(session: SessionSummary, base: string): Html {
  const byId = new Map(session.chains.map((chain) => [chain.id, chain]));
  const roots = session.chains.filter((chain) => chain.parent === null || !byId.has(chain.parent));
  const seen = new Set<string>();
  const node = (chain: ChainSummary): Html => {
    seen.add(chain.id);
    const children = chain.children.flatMap((id) => {
      const child = byId.get(id);
      return child && !seen.has(id) ? [child] : [];
    });
    return html`<li data-chain="${chain.id}"><span class="badge b-${chain.kind}">${chain.kind}</span>
<a href="${base}/chains/${encodeURIComponent(chain.id)}">${chain.id}</a>
<span class="muted">${chain.role} · ${chain.turns} turns · ${
      chain.tokens.toLocaleString("en")
    } tokens${chain.agentId ? ` · agent ${chain.agentId}` : ""}${
      chain.wipedAt !== null ? ` · wiped ${when(chain.wipedAt)}` : ""
    }</span>${children.length > 0 ? html`<ul>${children.map(node)}</ul>` : ""}</li>`;
  };
  return session.chains.length === 0
    ? html`<p class="muted">No chain yet.</p>`
    : html`<ul class="tree" id="chain-tree">${roots.map(node)}</ul>`;
}

const LANE_HEIGHT = 26;
const LABEL_WIDTH = 170;
const PLOT_WIDTH = 960;

/**
 * One lane per chain, its turns as bars placed in time (from the start of their work to their
 * commit), a wipe as a red mark, a sub-agent's start joined to its parent's lane.
 */
function swimlanes(
  timeline: readonly { header: ChainHeader; turns: TimelineTurn[] }[],
  base: string,
): Html {
  const spans = timeline.flatMap(({ turns }) =>
    turns.map(({ record }) => [record.createdAt - record.timings.totalMs, record.createdAt])
  );
  if (spans.length === 0) return html`<p class="muted">No turn yet.</p>`;
  const t0 = Math.min(...spans.map(([start]) => start));
  const t1 = Math.max(
    ...spans.map(([, end]) => end),
    ...timeline.map((c) => c.header.wipedAt ?? 0),
  );
  const scale = PLOT_WIDTH / Math.max(1, t1 - t0);
  const x = (at: number) => LABEL_WIDTH + (at - t0) * scale;
  const laneOf = new Map(timeline.map(({ header }, i) => [header.id, i]));
  const height = timeline.length * LANE_HEIGHT + 24;
  const lanes = timeline.map(({ header, turns }, lane) => {
    const y = lane * LANE_HEIGHT;
    const bars = turns.map((turn) => {
      const { record } = turn;
      const start = x(record.createdAt - record.timings.totalMs);
      const width = Math.max(2, record.timings.totalMs * scale);
      const flags = turnFlags(turn);
      const fill = turn.discarded
        ? "#d1d5db"
        : flags.some((flag) => flag === "ill_formed" || flag === "engine_aborted")
        ? "#f87171"
        : flags.length > 0
        ? "#fb923c"
        : "#60a5fa";
      return html`
        <a
          href="${base}/chains/${encodeURIComponent(header.id)}?turn=${record
            .index}"><rect class="turn" data-chain="${header.id}" data-turn="${record
            .index}" x="${start.toFixed(1)}" y="${y + 5}" width="${width.toFixed(
              1,
            )}" height="${LANE_HEIGHT -
            10}" fill="${fill}"><title>${`${header.id} turn ${record.index} · ${
            record.route ?? "?"
          } · ${record.outputLen} sampled · ${record.timings.totalMs.toFixed(0)} ms${
            flags.length > 0 ? ` · ${flags.join(", ")}` : ""
          }`}</title></rect></a>
      `;
    });
    const wipe = header.wipedAt === null ? "" : html`
      <line class="wipe" x1="${x(header.wipedAt).toFixed(1)}" x2="${x(header.wipedAt).toFixed(
        1,
      )}" y1="${y + 2}" y2="${y + LANE_HEIGHT - 2}"
        stroke="#dc2626" stroke-width="3">
        <title>wiped ${when(header.wipedAt)}</title>
      </line>
    `;
    const parentLane = header.parent === null ? undefined : laneOf.get(header.parent);
    const link = parentLane === undefined ? "" : html`
      <line x1="${x(header.createdAt).toFixed(1)}" x2="${x(header.createdAt).toFixed(
        1,
      )}" y1="${parentLane * LANE_HEIGHT + LANE_HEIGHT / 2}" y2="${y +
        LANE_HEIGHT / 2}" stroke="#9ca3af"
        stroke-dasharray="3 2" />
    `;
    return html`
      <g class="lane"
        data-chain="${header.id}"><text class="lane-label" x="4" y="${y + LANE_HEIGHT / 2 +
          4}">${header.role}${header.wipedAt !== null ? " (wiped)" : ""} ${header.id.length > 16
          ? `${header.id.slice(0, 15)}…`
          : header.id}</text><line x1="${LABEL_WIDTH}" x2="${LABEL_WIDTH + PLOT_WIDTH}" y1="${y +
          LANE_HEIGHT / 2}" y2="${y + LANE_HEIGHT / 2}" stroke="#f3f4f6"/>${link}${bars}${wipe}</g>
    `;
  });
  return html`<svg class="swim" id="swimlanes" width="${
    LABEL_WIDTH + PLOT_WIDTH + 10
  }" height="${height}">
${lanes}<text class="lane-label" x="${LABEL_WIDTH}" y="${height - 6}">${when(t0)}</text>
<text class="lane-label" x="${LABEL_WIDTH + PLOT_WIDTH - 120}" y="${height - 6}">+${
    ((t1 - t0) / 1000).toFixed(1)
  } s</text></svg>`;
}

/**
 * The prompt tokens the engine served from its cache, and their share of the prompt (`—` when it
 * reported none); the worker it ran on, as a tooltip, when the gateway placed it.
 */
function cacheHits(record: TurnRecord): Html | string {
  if (record.cachedTokens === undefined) return "—";
  const share = record.inputLen === 0 ? 0 : Math.floor(100 * record.cachedTokens / record.inputLen);
  return html`<span title="${record.worker ?? ""}">${record.cachedTokens} (${share}%)</span>`;
}

/** A chain's turns, every one it recorded, with the facts a debugging engineer looks for. */
function turnTable(header: ChainHeader, turns: readonly TimelineTurn[], base: string): Html {
  const href = `${base}/chains/${encodeURIComponent(header.id)}`;
  const row = (turn: TimelineTurn) => {
    const record: TurnRecord = turn.record;
    const gatewayMs = Math.max(0, record.timings.totalMs - record.timings.engineMs);
    return html`
      <tr data-turn="${record.index}" class="${turn.discarded ? "muted" : ""}">
        <td class="num">${turn.discarded
          ? record.index
          : html`<a href="${href}?turn=${record.index}">${record.index}</a>`}</td>
        <td>${record.route ?? "—"}</td>
        <td class="num">${record.inputLen}</td>
        <td class="num cached">${cacheHits(record)}</td>
        <td class="num">${record.deltaLen}</td>
        <td class="num">${record.outputLen}</td>
        <td>${record.finishReason}</td>
        <td class="num">${record.toolCalls}</td>
        <td>${turnFlags(turn).map((flag) => html`<span class="flag">${flag}</span>`)}</td>
        <td class="mono">${record.weightVersions.join(", ") || "—"}</td>
        <td class="num">${record.timings.engineMs.toFixed(0)}</td>
        <td class="num">${gatewayMs.toFixed(1)}</td>
        <td>${when(record.createdAt)}</td>
      </tr>
    `;
  };
  return html`
    <h3 class="mono" id="turns-${header.id}"><a href="${href}">${header.id}</a></h3>
    <table class="turns" data-chain="${header.id}">
      <thead>
        <tr>
          <th class="num">#</th>
          <th>route</th>
          <th class="num">prompt</th>
          <th class="num" title="prompt tokens the engine served from its prefix cache">cached</th>
          <th class="num">delta</th>
          <th class="num">sampled</th>
          <th>finish</th>
          <th class="num">tool calls</th>
          <th>flags</th>
          <th>versions</th>
          <th class="num">engine ms</th>
          <th class="num">gateway ms</th>
          <th>at (UTC)</th>
        </tr>
      </thead>
      <tbody>${turns.map(row)}</tbody>
    </table>
  `;
}
