/**
 * The viewer's page shell: one stylesheet, the navigation, and the small script that shows a
 * token's facts on hover. Pages are server-rendered HTML; the script only reads `data-*`
 * attributes the page already holds, so the pages work without it.
 *
 * @module
 */
import type { MiddlewareHandler } from "hono";
import { html, raw } from "hono/html";
import { NONCE, secureHeaders } from "hono/secure-headers";
import type { HtmlEscapedString } from "hono/utils/html";

/** What a page body is: HTML text, escaped where it came from data. */
export type Html = HtmlEscapedString | Promise<HtmlEscapedString>;

/**
 * Token colours, fixed so a test can check them: prompt and closing tokens (mask 0) grey,
 * sampled tokens of a masked turn (mask 0) orange, sampled tokens (mask 1) green through red
 * by logprob.
 */
export const TOKEN_COLOURS = {
  prompt: "rgb(229, 231, 235)",
  closing: "rgb(156, 163, 175)",
  masked: "rgb(253, 186, 116)",
  /** Sampled, by logprob bucket: ≥ -0.1, ≥ -0.5, ≥ -1.5, ≥ -3, lower. */
  sampled: [
    "rgb(134, 239, 172)",
    "rgb(190, 242, 100)",
    "rgb(253, 224, 71)",
    "rgb(251, 146, 60)",
    "rgb(248, 113, 113)",
  ],
} as const;

/** Upper logprob bounds of the sampled buckets after the first, as the colours above. */
export const LOGPROB_BUCKETS = [-0.1, -0.5, -1.5, -3] as const;

/** The bucket (0 most likely … 4 least) of a sampled token's logprob. */
export function logprobBucket(logprob: number): number {
  let bucket = 0;
  while (bucket < LOGPROB_BUCKETS.length && logprob < LOGPROB_BUCKETS[bucket]) bucket++;
  return bucket;
}

const STYLE = `
*{box-sizing:border-box}
body{font:14px/1.45 system-ui,sans-serif;margin:0;color:#111827;background:#f9fafb}
header{background:#111827;color:#f9fafb;padding:8px 16px;display:flex;gap:16px;align-items:center}
header a{color:#f9fafb;text-decoration:none}header a:hover{text-decoration:underline}
header .brand{font-weight:600;margin-right:12px}header form{margin-left:auto}
main{padding:16px;max-width:1400px}
h1{font-size:20px;margin:4px 0 12px}h2{font-size:16px;margin:20px 0 8px}
table{border-collapse:collapse;background:#fff;width:100%}
th,td{border:1px solid #e5e7eb;padding:4px 8px;text-align:left;vertical-align:top}
th{background:#f3f4f6;font-weight:600}
td.num,th.num{text-align:right;font-variant-numeric:tabular-nums}
code,pre,.mono{font-family:ui-monospace,SFMono-Regular,Menlo,monospace;font-size:12px}
pre{background:#fff;border:1px solid #e5e7eb;padding:8px;overflow:auto;max-height:320px}
.badge{display:inline-block;padding:0 6px;border-radius:9px;font-size:12px;background:#e5e7eb}
.b-open,.b-final,.b-done,.b-passed{background:#bbf7d0}
.b-closed,.b-completed{background:#dbeafe}
.b-aborted,.b-failed,.b-tests_failed,.b-wipe{background:#fecaca}
.b-subagent{background:#e9d5ff}.b-side{background:#fef3c7}
.b-queued,.b-booting,.b-agent,.b-evaluating{background:#fde68a}
.flag{display:inline-block;padding:0 5px;margin-right:3px;border-radius:4px;font-size:11px;background:#fee2e2;color:#991b1b}
.muted{color:#6b7280}
.filters{display:flex;gap:8px;flex-wrap:wrap;align-items:end;margin-bottom:12px}
.filters label{display:flex;flex-direction:column;font-size:12px;color:#374151}
.filters input,.filters select{padding:3px 6px}
.tree,.tree ul{list-style:none;padding-left:18px;margin:0}.tree{padding-left:0}
.tree li{margin:2px 0}
.phasebar{display:flex;height:14px;width:220px;border:1px solid #d1d5db;background:#fff}
.phasebar span{display:block;height:100%}
.ph-queued{background:#d1d5db}.ph-booting{background:#fde68a}.ph-agent{background:#93c5fd}
.ph-evaluating{background:#c4b5fd}.ph-done{background:#4ade80}.ph-failed{background:#f87171}
.ph-aborted{background:#fb923c}
.nav{display:flex;gap:10px;align-items:center;margin:8px 0;flex-wrap:wrap}
.legend span.t{margin-right:10px}
.tokens{white-space:pre-wrap;word-break:break-all;background:#fff;border:1px solid #e5e7eb;padding:8px;font-family:ui-monospace,Menlo,monospace;font-size:12px;line-height:1.7}
.t{border-radius:2px;outline:1px solid rgba(255,255,255,.9)}
.t:hover{outline:2px solid #1d4ed8}
.t.p{background:${TOKEN_COLOURS.prompt}}.t.c{background:${TOKEN_COLOURS.closing}}
.t.x{background:${TOKEN_COLOURS.masked}}
${TOKEN_COLOURS.sampled.map((colour, i) => `.t.l${i}{background:${colour}}`).join("")}
.tb{display:inline-block;margin:6px 4px 2px 0;padding:0 6px;background:#1f2937;color:#fff;border-radius:4px;font-family:system-ui,sans-serif;font-size:11px}
.tb.flagged{background:#b91c1c}
#hover{position:fixed;right:12px;bottom:12px;max-width:520px;background:#111827;color:#f9fafb;padding:8px 10px;border-radius:6px;font:12px ui-monospace,Menlo,monospace;white-space:pre-wrap;display:none}
.lane-label{font-size:11px;fill:#374151}
svg.swim{background:#fff;border:1px solid #e5e7eb}
.login{max-width:420px;margin:80px auto;background:#fff;padding:24px;border:1px solid #e5e7eb}
.login input[type=password]{width:100%;padding:6px;margin:8px 0}
.error{color:#b91c1c}
`;

/** Shows a token's facts in the corner on hover (event delegation: one listener per page). */
const HOVER_SCRIPT = `
const box = document.getElementById("hover");
const tokens = document.getElementById("tokens");
if (box && tokens) {
  tokens.addEventListener("mouseover", (event) => {
    const t = event.target.closest(".t");
    if (!t) return;
    const d = t.dataset;
    const lines = ["position " + d.p + " · turn " + d.turn, "id " + d.i + " · " + JSON.stringify(t.textContent.replace(/↵\\n/g, "\\n")), "mask " + d.m + " · " + d.part];
    if (d.lp !== undefined) lines.push("logprob " + d.lp + " (p = " + Math.exp(Number(d.lp)).toFixed(4) + ")");
    if (d.v !== undefined) lines.push("weight version " + d.v);
    box.textContent = lines.join("\\n");
    box.style.display = "block";
  });
  tokens.addEventListener("mouseleave", () => { box.style.display = "none"; });
}
`;

/** A whole page: `title`, the navigation (unless logged out) and `body`. */
export function page(
  title: string,
  body: Html,
  options: { readonly nonce: string; readonly nav?: boolean; readonly script?: boolean },
): Html {
  const nav = options.nav === false ? "" : html`<header>
  <span class="brand">Rollout Gateway</span>
  <a href="/ui">Sessions</a>
  <a href="/ui/rollouts">Rollouts</a>
  <form method="post" action="/ui/logout"><button type="submit">Log out</button></form>
</header>`;
  return html`
    <!doctype html>
    <html lang="en">
      <head>
        <meta charset="utf-8">
        <meta name="viewport" content="width=device-width">
        <title>${title} · Rollout Gateway</title>
        <style>${raw(STYLE)}</style>
      </head>
      <body>${nav}<main>${body}</main>${options.script
        ? html`
          <div id="hover"></div>
          <script nonce="${options.nonce}">${raw(HOVER_SCRIPT)}</script>
        `
        : ""}</body>
    </html>
  `;
}

/**
 * The headers every viewer page carries (`hono/secure-headers`): no framing, no sniffing, no
 * referrer, and scripts by the request's nonce only (`c.get("secureHeadersNonce")`). HSTS is the
 * TLS proxy's to set, for its own domain: the gateway serves plain HTTP.
 */
export const viewerSecurity: MiddlewareHandler = secureHeaders({
  contentSecurityPolicy: {
    defaultSrc: ["'none'"],
    // Inline style attributes (bar widths) need it; every value in them is the page's own.
    styleSrc: ["'unsafe-inline'"],
    scriptSrc: [NONCE],
    imgSrc: ["'self'", "data:"],
    formAction: ["'self'"],
    frameAncestors: ["'none'"],
    baseUri: ["'none'"],
  },
  xFrameOptions: "DENY",
  strictTransportSecurity: false,
});

/** Headers a viewer page adds to {@linkcode viewerSecurity}'s: never cached. */
export const PAGE_HEADERS: Readonly<Record<string, string>> = { "cache-control": "no-store" };

/** Escapes text for HTML (for the token view, which builds its markup as one string). */
export function escapeHtml(text: string): string {
  return text.replace(
    /[&<>"']/g,
    (c) =>
      c === "&"
        ? "&amp;"
        : c === "<"
        ? "&lt;"
        : c === ">"
        ? "&gt;"
        : c === '"'
        ? "&quot;"
        : "&#39;",
  );
}

/** `value` as short JSON for a table cell: at most `max` characters. */
export function shortJson(value: unknown, max = 160): string {
  const text = JSON.stringify(value) ?? "";
  return text.length > max ? `${text.slice(0, max - 1)}…` : text;
}

/** A time as `YYYY-MM-DD HH:MM:SS` (UTC), or a dash. */
export function when(at: number | string | null | undefined): string {
  if (at === null || at === undefined) return "—";
  const date = new Date(at);
  return Number.isNaN(date.getTime()) ? "—" : date.toISOString().slice(0, 19).replace("T", " ");
}
