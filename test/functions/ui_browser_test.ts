/**
 * The viewer in a real browser (Debian's headless Chromium, driven by playwright-core) against a
 * gateway holding recorded sessions and a graded rollout group: the admin token typed once into
 * the login form, every page loads without a script or style error, the token view's colours
 * are the loss mask and logprob of every token, hover shows a token's facts, the evaluation
 * names its tests. Screenshots go to test_artifacts/screenshots/ (docs/screenshots/ come from here).
 */
import assert from "node:assert/strict";
import { LOGPROB_BUCKETS, TOKEN_COLOURS } from "../../functions/ui/_layout.ts";
import { openPage, withBrowser } from "../_browser.ts";
import { ADMIN_HEADERS, ADMIN_TOKEN, type SampleJson } from "../_gateway.ts";
import { seedGateway } from "../_ui_seed.ts";

/** The colour a token of mask 1 and this logprob must show. */
function sampledColour(logprob: number): string {
  let bucket = 0;
  while (bucket < LOGPROB_BUCKETS.length && logprob < LOGPROB_BUCKETS[bucket]) bucket++;
  return TOKEN_COLOURS.sampled[bucket];
}

Deno.test("the viewer in headless Chromium: login, sessions, timeline, tokens by mask, rollouts", async () => {
  const seeded = await seedGateway();
  const { gw } = seeded;
  try {
    const response = await fetch(`${gw.url}/sessions/${seeded.flagged}/samples`, {
      headers: ADMIN_HEADERS,
    });
    const [sample] = (await response.json()).samples as SampleJson[];
    await withBrowser(async (browser) => {
      const page = await openPage(browser, `${gw.url}/ui`, {
        viewport: { width: 1400, height: 900 },
      });
      // Refused without the token: the login form, nothing recorded.
      assert.equal(page.status, 401);
      assert.equal(await page.count("#sessions"), 0);
      await page.screenshot("ui_login");
      await page.playwright.fill("input[name=token]", "not-the-admin-token");
      await page.click("button[type=submit]");
      await page.waitFor("#login-error");
      await page.playwright.fill("input[name=token]", ADMIN_TOKEN);
      await page.click("button[type=submit]");
      await page.waitFor("#sessions");
      const rows = await page.count("#sessions tbody tr[data-session]");
      assert.equal(rows, 5, "two graded samples, two recorded episodes, the flagged session");
      await page.screenshot("ui_sessions", { fullPage: true });

      // One session: the chain tree and a lane per chain, a bar per turn.
      assert.equal(await page.goto(`${gw.url}/ui/sessions/${seeded.parallel}`), 200);
      await page.waitFor("#swimlanes");
      assert.equal(await page.count("#chain-tree li"), 3);
      assert.equal(await page.count("#swimlanes g.lane"), 3);
      const view = await (await fetch(`${gw.url}/sessions/${seeded.parallel}`, {
        headers: ADMIN_HEADERS,
      })).json();
      const turns = view.chains.reduce((n: number, chain: { turns: number }) => n + chain.turns, 0);
      assert.equal(await page.count("#swimlanes rect.turn"), turns);
      await page.screenshot("ui_session", { fullPage: true });
      assert.equal(await page.goto(`${gw.url}/ui/sessions/${seeded.compaction}`), 200);
      assert.equal(await page.count("#swimlanes line.wipe"), 1);

      // The token view: every token's colour is its mask's (and, where it trains, its
      // logprob's), at every position of the chain.
      assert.equal(await page.goto(`${gw.url}/ui/sessions/${seeded.flagged}/chains/c0`), 200);
      await page.waitFor("#tokens");
      const shown = await page.evaluate(`[...document.querySelectorAll("#tokens .t")].map((t) => [
        Number(t.dataset.p), Number(t.dataset.i), getComputedStyle(t).backgroundColor])`) as [
        number,
        number,
        string,
      ][];
      const ids = [...sample.prompt_ids, ...sample.response_ids];
      assert.deepEqual(shown.map(([p]) => p), ids.map((_, i) => i));
      assert.deepEqual(shown.map(([, id]) => id), ids);
      const grey = new Set<string>([TOKEN_COLOURS.prompt, TOKEN_COLOURS.closing]);
      const expected = ids.map((_, p) => {
        const r = p - sample.prompt_ids.length;
        return r >= 0 && sample.loss_mask[r] === 1 ? sampledColour(sample.logprobs[r]) : "grey";
      });
      assert.deepEqual(
        shown.map(([, , colour]) => grey.has(colour) ? "grey" : colour),
        expected,
      );
      // Known positions: the first token is prompt, the first sampled token trains, the last
      // token closes a truncated turn.
      const firstSampled = sample.prompt_ids.length + sample.loss_mask.indexOf(1);
      assert.equal(await page.style('[data-p="0"]', "background-color"), TOKEN_COLOURS.prompt);
      assert.equal(
        await page.style(`[data-p="${ids.length - 1}"]`, "background-color"),
        TOKEN_COLOURS.closing,
      );
      await page.hover(`[data-p="${firstSampled}"]`);
      await page.waitFor("#hover");
      const facts = await page.text("#hover");
      const logprob = sample.logprobs[firstSampled - sample.prompt_ids.length];
      assert.match(facts, new RegExp(`^position ${firstSampled} · turn 0$`, "m"));
      assert.match(facts, new RegExp(`^id ${ids[firstSampled]} · `, "m"));
      assert.match(facts, /^mask 1 · sampled$/m);
      assert.match(facts, new RegExp(`^logprob ${logprob.toFixed(4).replace("-", "\\-")} `, "m"));
      assert.match(facts, /^weight version default$/m);
      await page.screenshot("ui_tokens");
      // The turn markers carry the flags.
      assert.match(await page.text("#turn-1"), /ill_formed/);
      assert.match(await page.text("#turn-3"), /truncated/);
      assert.match(await page.text("#turn-0"), /replayed×1/);

      // Rollouts: the group's phases and tool turns, and the failing test by name.
      assert.equal(await page.goto(`${gw.url}/ui/rollouts`), 200);
      assert.match(await page.text(`tr[data-group="${seeded.groupId}"] .phases`), /done 2/);
      await page.screenshot("ui_rollouts");
      assert.equal(await page.goto(`${gw.url}/ui/rollouts/${seeded.groupId}`), 200);
      for (const summary of await page.playwright.locator("details.evaluation summary").all()) {
        await summary.click();
      }
      assert.equal(
        await page.count(
          "table.tests td.mono:text-is('tests.test_calc.TestCalc.test_mean_fraction')",
        ),
        2,
        "the test is named in both samples' evaluations (passed in one, failed in the other)",
      );
      await page.screenshot("ui_rollout_group", { fullPage: true });
      // The two refusals before the login are the only failed loads; no script or style was
      // refused by the page's policy, and no script failed.
      assert.deepEqual(page.errors, [
        "Failed to load resource: the server responded with a status of 401 (Unauthorized)",
        "Failed to load resource: the server responded with a status of 401 (Unauthorized)",
      ]);

      // Logging out ends it: the viewer refuses again.
      await page.click("header form button");
      await page.waitFor("input[name=token]");
      assert.equal(await page.goto(`${gw.url}/ui`), 401);
    });
  } finally {
    await gw.close();
  }
});
