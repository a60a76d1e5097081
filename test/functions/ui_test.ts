/**
 * The viewer over HTTP (`app.request`, no browser): it refuses without the admin token, its
 * login keeps the token out of URLs and cookies, and what it shows is what was recorded — the
 * token view's ids, masks and logprobs equal the samples export whole, page by page.
 */
import assert from "node:assert/strict";
import {
  ADMIN_HEADERS,
  ADMIN_TOKEN,
  type SampleJson,
  startGateway,
  twoTurns,
} from "../_gateway.ts";
import { type Seeded, seedGateway } from "../_ui_seed.ts";
import { loginCookie } from "../../functions/ui/_auth.ts";

interface Span {
  cls: string;
  p: number;
  i: number;
  m: number;
  part: string;
  turn: number;
  lp: string | null;
  v: string | null;
}

const SPAN =
  /<span class="t ([^"]+)" data-p="(\d+)" data-i="(\d+)" data-m="(\d)" data-part="(\w+)" data-turn="(\d+)"(?: data-lp="([^"]+)")?(?: data-v="([^"]+)")?>/g;

/** The token spans of a token-view page. */
function spans(page: string): Span[] {
  return [...page.matchAll(SPAN)].map((m) => ({
    cls: m[1],
    p: Number(m[2]),
    i: Number(m[3]),
    m: Number(m[4]),
    part: m[5],
    turn: Number(m[6]),
    lp: m[7] ?? null,
    v: m[8] ?? null,
  }));
}

async function get(seeded: Seeded, path: string, headers: HeadersInit = ADMIN_HEADERS) {
  const response = await seeded.gw.app.request(path, { headers });
  // Whitespace between and inside tags collapsed: markup is matched, not its layout.
  const text = (await response.text()).replace(/\s+/g, " ").replaceAll("> <", "><");
  return { status: response.status, headers: response.headers, text };
}

async function samples(seeded: Seeded, id: string): Promise<SampleJson[]> {
  const response = await seeded.gw.app.request(`/sessions/${id}/samples?include_side=true`, {
    headers: ADMIN_HEADERS,
  });
  assert.equal(response.status, 200);
  return (await response.json()).samples;
}

Deno.test("the viewer shows recorded sessions and rollouts as they were recorded", async (t) => {
  const seeded = await seedGateway();
  const { gw } = seeded;
  try {
    const pages = [
      "/ui",
      "/ui?status=open",
      `/ui/sessions/${seeded.parallel}`,
      `/ui/sessions/${seeded.parallel}/chains/c0`,
      "/ui/rollouts",
      `/ui/rollouts/${seeded.groupId}`,
    ];

    await t.step(
      "every page refuses a request without the admin token (401 login page)",
      async () => {
        for (const path of pages) {
          const response = await get(seeded, path, {});
          assert.equal(response.status, 401, path);
          assert.match(response.text, /<form method="post" action="\/ui\/login\?next=/, path);
          // Nothing recorded: no table, no token, no chain, no test name.
          assert.doesNotMatch(response.text, /<table|data-p=|data-chain=|test_calc/, path);
        }
        const wrong = { authorization: "Bearer not-the-admin-token-at-all" };
        assert.equal((await get(seeded, "/ui", wrong)).status, 401);
        const forged = {
          cookie: `rg_ui=${loginCookie("another-admin-token-0123", Date.now() + 60_000)}`,
        };
        assert.equal((await get(seeded, "/ui", forged)).status, 401, "a cookie of another token");
        const expired = { cookie: `rg_ui=${loginCookie(ADMIN_TOKEN, Date.now() - 1)}` };
        assert.equal((await get(seeded, "/ui", expired)).status, 401, "an expired cookie");
        const { token } = await gw.openSession();
        const session = { authorization: `Bearer ${token}` };
        assert.equal((await get(seeded, "/ui", session)).status, 403, "a session token");
        for (const path of pages) assert.equal((await get(seeded, path)).status, 200, path);
      },
    );

    await t.step(
      "logging in sets a signed cookie, never the token, and follows only viewer paths",
      async () => {
        const login = (token: string, next = "/ui/rollouts") =>
          gw.app.request(`/ui/login?next=${encodeURIComponent(next)}`, {
            method: "POST",
            headers: { "content-type": "application/x-www-form-urlencoded" },
            body: new URLSearchParams({ token }).toString(),
          });
        const refused = await login("wrong-token-0123456789");
        assert.equal(refused.status, 401);
        assert.equal(refused.headers.get("set-cookie"), null);
        assert.match(
          await refused.text(),
          /<p class="error" id="login-error">Invalid admin token</,
        );
        const { token: sessionToken } = await gw.openSession();
        const bySession = await login(sessionToken);
        assert.equal(bySession.status, 403, "a session's token, as everywhere else");
        assert.match(await bySession.text(), /A session token cannot use the trainer API/);
        const long = await login("x".repeat(513));
        assert.equal(long.status, 400);
        assert.match(await long.text(), /token: longer than 512 characters/);
        const big = await gw.app.request("/ui/login", {
          method: "POST",
          headers: { "content-type": "application/x-www-form-urlencoded" },
          body: `token=${"x".repeat(5000)}`,
        });
        assert.equal(big.status, 413);
        assert.match(await big.text(), /Request body is larger than 4096 bytes/);

        const accepted = await login(ADMIN_TOKEN);
        assert.equal(accepted.status, 303);
        assert.equal(accepted.headers.get("location"), "/ui/rollouts");
        const cookie = accepted.headers.get("set-cookie")!;
        assert.match(
          cookie,
          /^rg_ui=\d+\.[A-Za-z0-9_-]{43}; Path=\/ui; Max-Age=43200; HttpOnly; SameSite=Strict$/,
        );
        assert.ok(!cookie.includes(ADMIN_TOKEN), "the cookie is not the token");
        const jar = { cookie: cookie.split(";")[0] };
        assert.equal((await get(seeded, `/ui/sessions/${seeded.flagged}`, jar)).status, 200);
        // The cookie opens the viewer only: the trainer API still wants the token itself.
        assert.equal((await gw.app.request("/sessions", { headers: jar })).status, 401);
        for (const next of ["https://elsewhere.example/", "//elsewhere.example/ui", "/sessions"]) {
          assert.equal((await login(ADMIN_TOKEN, next)).headers.get("location"), "/ui", next);
        }
        const out = await gw.app.request("/ui/logout", { method: "POST", headers: jar });
        assert.equal(out.status, 303);
        assert.match(out.headers.get("set-cookie")!, /^rg_ui=; Path=\/ui; Max-Age=0/);
      },
    );

    await t.step("pages carry a script policy by nonce and no caching", async () => {
      const page = await get(seeded, `/ui/sessions/${seeded.flagged}/chains/c0`);
      const csp = page.headers.get("content-security-policy")!;
      const nonce = /script-src 'nonce-([A-Za-z0-9+/]{22}==)'/.exec(csp)![1];
      // Base64: `+` and `/` are its own, not patterns.
      assert.ok(page.text.includes(`<script nonce="${nonce}">`), nonce);
      assert.equal(page.headers.get("cache-control"), "no-store");
      assert.match(csp, /frame-ancestors 'none'/);
      assert.match(csp, /^default-src 'none'/);
      assert.equal(page.headers.get("x-frame-options"), "DENY");
      assert.equal(page.headers.get("x-content-type-options"), "nosniff");
      assert.equal(page.headers.get("referrer-policy"), "no-referrer");
      assert.equal(page.headers.get("strict-transport-security"), null);
      // A new nonce each page.
      const again = await get(seeded, `/ui/sessions/${seeded.flagged}/chains/c0`);
      assert.notEqual(again.headers.get("content-security-policy"), csp);
    });

    await t.step(
      "the token view is the samples export: ids, masks and logprobs, page by page",
      async () => {
        for (const sessionId of [seeded.flagged, seeded.parallel, seeded.compaction]) {
          for (const sample of await samples(seeded, sessionId)) {
            const ids = [...sample.prompt_ids, ...sample.response_ids];
            const mask = [...sample.prompt_ids.map(() => 0), ...sample.loss_mask];
            const shown: Span[] = [];
            for (let from = 0; from < ids.length || from === 0; from += 1000) {
              const page = await get(
                seeded,
                `/ui/sessions/${sessionId}/chains/${sample.chain_id}?from=${from}&size=1000`,
              );
              assert.equal(page.status, 200);
              shown.push(...spans(page.text));
            }
            const label = `${sessionId}/${sample.chain_id}`;
            assert.deepEqual(shown.map((s) => s.p), ids.map((_, i) => i), label);
            assert.deepEqual(shown.map((s) => s.i), ids, label);
            assert.deepEqual(shown.map((s) => s.m), mask, label);
            const logprobs = sample.logprobs.map((lp, i) =>
              sample.loss_mask[i] === 1 ? lp.toFixed(4) : null
            );
            assert.deepEqual(
              shown.slice(sample.prompt_ids.length).map((s) => s.m === 1 ? s.lp : null),
              logprobs,
              label,
            );
            // Colours follow the mask: grey prompt/closing, a logprob bucket where it trains.
            for (const span of shown) {
              if (span.m === 1) assert.match(span.cls, /^l[0-4]$/, `${label}@${span.p}`);
              else assert.match(span.cls, /^[pcx]$/, `${label}@${span.p}`);
            }
          }
        }
      },
    );

    await t.step(
      "each turn is marked with its flags; rewound and replayed turns are shown",
      async () => {
        const page = await get(seeded, `/ui/sessions/${seeded.flagged}/chains/c0`);
        const markers = [
          ...page.text.matchAll(/<span class="tb[^"]*" id="turn-(\d+)" data-turn="\d+">([^<]*)</g),
        ]
          .map((m) => m[2]);
        assert.deepEqual(markers, [
          "turn 0 · start · replayed×1",
          "turn 1 · append · ill_formed",
          "turn 2 · rewind",
          "turn 3 · append · truncated",
        ]);
        const session = await get(seeded, `/ui/sessions/${seeded.flagged}`);
        const rows = [
          ...session.text.matchAll(/<tr data-turn="(\d+)" class="([^"]*)">([\s\S]*?)<\/tr>/g),
        ]
          .map((m) => [
            Number(m[1]),
            m[2],
            [...m[3].matchAll(/<span class="flag">([^<]+)</g)].map((f) => f[1]).join(","),
          ]);
        assert.deepEqual(rows, [
          [0, "", "replayed×1"],
          [1, "", "ill_formed"],
          [2, "muted", "truncated,rewound"],
          [2, "", "rewind"],
          [3, "", "truncated"],
        ]);
        // A turn's page, asked by index, is the page that holds its first token.
        const byTurn = await get(seeded, `/ui/sessions/${seeded.flagged}/chains/c0?turn=3&size=16`);
        const first = spans(byTurn.text)[0].p;
        assert.equal(first % 16, 0);
        assert.ok(byTurn.text.includes('id="turn-3"'));
      },
    );

    await t.step("the session page draws the chain tree and a lane per chain", async () => {
      const parallel = await get(seeded, `/ui/sessions/${seeded.parallel}`);
      const view =
        await (await gw.app.request(`/sessions/${seeded.parallel}`, { headers: ADMIN_HEADERS }))
          .json();
      const lanes = [...parallel.text.matchAll(/<g class="lane" data-chain="([^"]+)"/g)].map((m) =>
        m[1]
      );
      assert.deepEqual(lanes, view.chains.map((chain: { id: string }) => chain.id));
      const bars = [...parallel.text.matchAll(/<rect class="turn" data-chain="([^"]+)"/g)].length;
      assert.equal(bars, view.chains.reduce((n: number, c: { turns: number }) => n + c.turns, 0));
      assert.deepEqual(
        view.chains.filter((c: { kind: string }) => c.kind === "subagent").length,
        2,
      );
      for (const chain of view.chains) {
        assert.ok(parallel.text.includes(`<li data-chain="${chain.id}">`), chain.id);
      }
      const compaction = await get(seeded, `/ui/sessions/${seeded.compaction}`);
      assert.match(compaction.text, /<line class="wipe"/);
      assert.match(compaction.text, /badge b-wipe">wipe</);
    });

    await t.step("the lists filter by status, metadata and reward", async () => {
      const listed = (text: string) =>
        [...text.matchAll(/<tr data-session="([^"]+)"/g)].map((m) => m[1]).sort();
      const meta = await get(seeded, "/ui?meta=scenario%3Dparallel");
      assert.deepEqual(listed(meta.text), [seeded.parallel]);
      const rewarded = await get(seeded, "/ui?reward_min=0.5&reward_max=0.8");
      assert.deepEqual(listed(rewarded.text), [seeded.parallel]);
      const failed = await get(seeded, "/ui?reward_max=0.5");
      assert.deepEqual(listed(failed.text), [seeded.failed], "the job that failed its test");
      assert.deepEqual(
        listed((await get(seeded, "/ui?status=closed")).text),
        [seeded.failed, seeded.passed].sort(),
        "the jobs' sessions, closed when graded",
      );
      assert.equal((await get(seeded, "/ui?reward_min=abc")).status, 400);
      const many = Array.from({ length: 9 }, (_, i) => `meta=k${i}%3Dv`).join("&");
      const tooMany = await get(seeded, `/ui?${many}`);
      assert.equal(tooMany.status, 400);
      assert.match(tooMany.text, /meta: at most 8 filters/);
    });

    await t.step("GET /sessions filters by reward bounds too", async () => {
      const list = async (query: string) => {
        const response = await gw.app.request(`/sessions?${query}`, { headers: ADMIN_HEADERS });
        assert.equal(response.status, 200);
        return (await response.json()).sessions.map((s: { id: string }) => s.id).sort();
      };
      assert.deepEqual(await list("reward_min=1"), [seeded.passed]);
      assert.deepEqual(await list("reward_min=0.5"), [seeded.parallel, seeded.passed].sort());
      assert.deepEqual(await list("reward_min=0.5&reward_max=0.8"), [seeded.parallel]);
      assert.deepEqual(await list("reward_max=0"), [seeded.failed]);
      for (const query of ["reward_min=NaN", "reward_min=", "reward_max=abc"]) {
        const bad = await gw.app.request(`/sessions?${query}`, { headers: ADMIN_HEADERS });
        assert.equal(bad.status, 400, query);
        await bad.body?.cancel();
      }
    });

    await t.step("a rollout group shows its phases, tool turns and the tests by name", async () => {
      const groups = await get(seeded, "/ui/rollouts");
      const row =
        new RegExp(`<tr data-group="${seeded.groupId}">([\\s\\S]*?)</tr>`).exec(groups.text)![1];
      assert.match(row, /done 2/);
      assert.match(row, /<td class="num tool-turns">1 \(1–1\)<\/td>/);
      assert.match(row, /<td class="num">0\.50 \(0–1\)<\/td>/);
      const group = await get(seeded, `/ui/rollouts/${seeded.groupId}`);
      for (const id of seeded.jobIds) assert.ok(group.text.includes(`data-job="${id}"`), id);
      assert.match(
        group.text,
        /<td class="flag">failed<\/td><td class="mono">tests\.test_calc\.TestCalc\.test_mean_fraction<\/td>/,
      );
      assert.match(group.text, /b-passed">passed<\/span>\s*score 1/);
      assert.match(group.text, /b-tests_failed">tests_failed<\/span>\s*score 0/);
    });

    await t.step("what a client wrote is shown as text, never as markup", async () => {
      const { id } = await gw.openSession({ note: "<script>alert(1)</script>", "<b>": "&" });
      const list = await get(seeded, `/ui?meta=note%3D%3Cscript%3Ealert(1)%3C%2Fscript%3E`);
      assert.ok(list.text.includes(id));
      assert.ok(!list.text.includes("<script>alert(1)"), "escaped in the list");
      const page = await get(seeded, `/ui/sessions/${id}`);
      assert.ok(page.text.includes("&lt;script&gt;alert(1)&lt;/script&gt;"));
      assert.ok(!page.text.includes("<b>"));
    });

    await t.step(
      "unknown sessions, chains, groups and paths are 404 pages; bad queries 400",
      async () => {
        for (
          const path of [
            "/ui/sessions/nope",
            `/ui/sessions/${seeded.flagged}/chains/c9`,
            `/ui/sessions/${seeded.flagged}/chains/${"c".repeat(300)}`,
            "/ui/rollouts/grp_000000000000000000000000",
            "/ui/rollouts/not-a-group",
            "/ui/elsewhere",
          ]
        ) {
          const page = await get(seeded, path);
          assert.equal(page.status, 404, path);
          assert.match(page.headers.get("content-type")!, /^text\/html/, path);
        }
        for (
          const path of [
            `/ui/sessions/${seeded.flagged}/chains/c0?size=5`,
            `/ui/sessions/${seeded.flagged}/chains/c0?size=9000`,
            `/ui/sessions/${seeded.flagged}/chains/c0?from=-1`,
            "/ui?cursor=%%%",
            "/ui/rollouts?cursor=%20",
            "/ui/rollouts?cursor=zz", // the shape of a cursor, not one KV handed out
          ]
        ) {
          assert.equal((await get(seeded, path)).status, 400, path);
        }
      },
    );
  } finally {
    await gw.close();
  }
});

Deno.test("a chain's turn table shows each turn's cache hits: tokens the engine served, and their share", async () => {
  const gw = await startGateway({ workers: 2, script: () => "Noted." });
  try {
    const { id, token } = await gw.openSession();
    await twoTurns(gw.anthropic(token));
    const response = await gw.app.request(`/ui/sessions/${id}`, { headers: ADMIN_HEADERS });
    const text = (await response.text()).replace(/\s+/g, " ");
    const cells = [
      ...text.matchAll(/<td class="num cached"><span title="([^"]*)">([^<]+)<\/span>/g),
    ]
      .map((m) => [m[1], m[2]]);
    const [one, two] = gw.fleet!.workers.find((w) => w.calls.length > 0)!.calls;
    const cached = one.inputIds.length + one.output!.length;
    const worker = gw.fleet!.workers.find((w) => w.calls.length > 0)!.url;
    assert.deepEqual(cells, [
      [worker, "0 (0%)"],
      [worker, `${cached} (${Math.floor(100 * cached / two.inputIds.length)}%)`],
    ]);
  } finally {
    await gw.close();
  }
});
