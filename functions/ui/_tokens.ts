/**
 * The token view: a page of a chain's tokens coloured by loss mask and logprob, each turn's
 * start marked with its flags, a token's id, logprob and weight version shown on hover. Pages
 * hold at most `MAX_PAGE_TOKENS` tokens, so a 200k-token chain is 100 pages of 2,048.
 *
 * @module
 */
import { html, raw } from "hono/html";
import type { ChainPage } from "../../lib/session/mod.ts";
import { escapeHtml, type Html, logprobBucket } from "./_layout.ts";
import { turnFlags } from "./_sessions.ts";

/** How the view shows one token's text: its decoded text, a newline made visible. */
export type DecodeOne = (id: number) => string;

/** The class of a token: `p` prompt, `c` closing, `x` sampled but masked, `l0`–`l4` sampled. */
export function tokenClass(page: ChainPage, i: number): string {
  const part = page.parts[i];
  if (part === "prompt") return "p";
  if (part === "closing") return "c";
  return page.mask[i] === 0 ? "x" : `l${logprobBucket(page.logprobs[i] ?? 0)}`;
}

/** The tokens of `page` as one string of spans, a turn marker before each turn's first token. */
function tokenSpans(page: ChainPage, decode: DecodeOne, replays: ReadonlyMap<string, number>) {
  const out: string[] = [];
  let lastTurn = -1;
  for (let i = 0; i < page.ids.length; i++) {
    const t = page.turnOf[i];
    if (t !== lastTurn) {
      lastTurn = t;
      const span = page.turns[t];
      const flags = turnFlags({
        record: span.record,
        discarded: false,
        replays: replays.get(span.record.rid) ?? 0,
      });
      const route = span.record.route;
      const label = [
        `turn ${span.record.index}${page.from + i > span.start ? " (continued)" : ""}`,
        ...(route && !flags.includes(route) ? [route] : []),
        ...flags,
      ].join(" · ");
      out.push(
        `<span class="tb${
          flags.length > 0 ? " flagged" : ""
        }" id="turn-${span.record.index}" data-turn="${span.record.index}">${
          escapeHtml(label)
        }</span>`,
      );
    }
    const id = page.ids[i];
    const logprob = page.logprobs[i];
    const version = page.versions[i];
    const text = decode(id).replaceAll("\n", "↵\n");
    out.push(
      `<span class="t ${tokenClass(page, i)}" data-p="${page.from + i}" data-i="${id}" data-m="${
        page.mask[i]
      }" data-part="${page.parts[i]}" data-turn="${page.turns[t].record.index}"${
        logprob === null ? "" : ` data-lp="${logprob.toFixed(4)}"`
      }${version === null ? "" : ` data-v="${escapeHtml(version)}"`}>${escapeHtml(text)}</span>`,
    );
  }
  return raw(out.join(""));
}

/** The token view of one page. */
export function tokensBody(
  sessionId: string,
  page: ChainPage,
  size: number,
  decode: DecodeOne,
): Html {
  const base = `/ui/sessions/${encodeURIComponent(sessionId)}`;
  const self = `${base}/chains/${encodeURIComponent(page.header.id)}`;
  const at = (from: number) => `${self}?from=${from}&size=${size}`;
  const replays = new Map(page.turns.map((turn) => [turn.record.rid, turn.replays]));
  const pages = Math.max(1, Math.ceil(page.total / size));
  const current = Math.floor(page.from / size) + 1;
  const sampled = page.mask.reduce((n, m) => n + m, 0);
  const nav = html`<div class="nav">
${
    page.from > 0
      ? html`<a href="${at(0)}">« first</a> <a href="${
        at(Math.max(0, page.from - size))
      }" id="prev">‹ previous</a>`
      : ""
  }
<span>tokens ${page.from.toLocaleString("en")}–${page.to.toLocaleString("en")} of ${
    page.total.toLocaleString("en")
  } (page ${current} of ${pages})</span>
${
    page.to < page.total
      ? html`<a href="${at(page.to)}" id="next">next ›</a> <a href="${
        at((pages - 1) * size)
      }">last »</a>`
      : ""
  }
<form method="get" action="${self}"><input type="hidden" name="size" value="${size}"><label>turn
<select name="turn">${
    page.turns.map((turn) =>
      html`<option value="${turn.record.index}" ${
        turn.start <= page.from && page.from < turn.end ? "selected" : ""
      }>${turn.record.index} @ ${turn.start}${
        turnFlags({ record: turn.record, discarded: false, replays: turn.replays }).length > 0
          ? " ⚑"
          : ""
      }</option>`
    )
  }</select></label> <button type="submit">go</button></form></div>`;
  return html`
    <h1>Chain <span class="mono">${page.header
      .id}</span> <span class="muted">of <a href="${base}">${sessionId}</a></span></h1>
    <p
      class="muted">${page.header.role}${page.header.wipedAt !== null ? " (wiped)" : ""} · ${page
        .turns.length} live turns · ${page.total.toLocaleString("en")} tokens · model ${page.header
        .model} · ${sampled} of this page's tokens train (mask 1)</p>
    <p
      class="legend"><span class="t p">prompt · mask 0</span><span class="t l0">sampled · mask 1 · logprob ≥ -0.1</span><span class="t l1">≥ -0.5</span><span class="t l2">≥ -1.5</span><span class="t l3">≥ -3</span><span class="t l4">lower</span><span class="t x">sampled, masked · mask 0</span><span class="t c">turn closing · mask 0</span></p>
    ${nav}
    <div class="tokens" id="tokens" data-from="${page.from}" data-to="${page
      .to}">${page.ids.length === 0
      ? html`<span class="muted">No tokens.</span>`
      : tokenSpans(page, decode, replays)}</div>
    ${nav}
  `;
}
