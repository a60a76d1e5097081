/**
 * The browser harness of the page tests (test/_browser.ts) against a tiny page served on
 * 127.0.0.1: loading with cookies and headers, text, hover, computed colours, statuses,
 * screenshots, and a browser that leaves no process or profile behind.
 *
 * @module
 */
import assert from "node:assert/strict";
import { browserAvailable, openPage, SCREENSHOT_DIR, withBrowser } from "./_browser.ts";

const TOKEN = "harness-token";

const PAGE = `<!doctype html>
<html>
<head>
  <title>Harness page</title>
  <style>
    body { margin: 0; font-family: sans-serif; }
    #badge { background-color: rgb(0, 0, 255); padding: 8px; }
    .cell { display: inline-block; padding: 8px; background-color: rgb(255, 255, 255); }
    .cell .tip { visibility: hidden; }
    .cell:hover { background-color: rgb(0, 128, 0); }
    .cell:hover .tip { visibility: visible; }
  </style>
</head>
<body>
  <h1 id="greeting">Hello, {user}</h1>
  <p id="sent">header={header}</p>
  <span id="badge" title="Reward of the sample">0.75</span>
  <div class="cell" id="cell">turn 3<span class="tip">3 segments</span></div>
</body>
</html>`;

/** Serves the page, a 401 at /private without the bearer token, and a page that throws. */
function servePage(): Deno.HttpServer<Deno.NetAddr> {
  return Deno.serve({ hostname: "127.0.0.1", port: 0, onListen() {} }, (request) => {
    const { pathname } = new URL(request.url);
    if (pathname === "/private" && request.headers.get("authorization") !== `Bearer ${TOKEN}`) {
      return new Response("Unauthorized", { status: 401 });
    }
    if (pathname === "/broken") {
      const html = `<!doctype html><p id="ok">loaded</p><script>throw new Error("boom")</script>`;
      return new Response(html, { headers: { "content-type": "text/html; charset=utf-8" } });
    }
    if (pathname !== "/" && pathname !== "/private") {
      return new Response("Not found", { status: 404 });
    }
    const user = request.headers.get("cookie")?.match(/(?:^|; )user=([^;]*)/)?.[1] ?? "nobody";
    const html = PAGE.replace("{user}", user)
      .replace("{header}", request.headers.get("x-harness") ?? "none");
    return new Response(html, { headers: { "content-type": "text/html; charset=utf-8" } });
  });
}

const exists = (path: string) => Deno.stat(path).then(() => true, () => false);

Deno.test("openPage() loads a page with its cookies and headers, and reads its text", async () => {
  await using server = servePage();
  const base = `http://127.0.0.1:${server.addr.port}`;
  await withBrowser(async (browser) => {
    assert.match(browser.version, /^\d+\.\d+\.\d+\.\d+$/);
    const page = await openPage(browser, `${base}/`, {
      cookies: { user: "ada" },
      headers: { "x-harness": "yes" },
    });
    assert.equal(page.status, 200);
    assert.equal(await page.text("#greeting"), "Hello, ada");
    assert.equal(await page.text("#sent"), "header=yes");
    assert.equal(await page.evaluate<string>("document.title"), "Harness page");
    assert.equal(await page.evaluate(() => 6 * 7), 42);
    assert.equal(await page.count(".cell"), 1);
    assert.deepEqual(page.errors, []);

    const other = await openPage(browser, `${base}/`);
    assert.equal(await other.text("#greeting"), "Hello, nobody", "cookies are per page");
    assert.equal(await other.text("#sent"), "header=none", "headers are per page");
    assert.equal(await other.goto(`${base}/broken`), 200);
    assert.equal(await other.text("#ok"), "loaded");
    assert.match(other.errors.join("\n"), /boom/);
  });
});

Deno.test("page.hover() shows a title and a CSS-hover tooltip, and style() reads colours", async () => {
  await using server = servePage();
  await withBrowser(async (browser) => {
    const page = await openPage(browser, `http://127.0.0.1:${server.addr.port}/`);
    await page.hover("#badge");
    assert.equal(await page.attribute("#badge", "title"), "Reward of the sample");
    assert.equal(await page.style("#badge", "background-color"), "rgb(0, 0, 255)");

    assert.equal(await page.visible("#cell .tip"), false);
    assert.equal(await page.style("#cell", "background-color"), "rgb(255, 255, 255)");
    await page.hover("#cell");
    assert.equal(await page.visible("#cell .tip"), true);
    assert.equal(await page.text("#cell .tip"), "3 segments");
    assert.equal(await page.style("#cell", "background-color"), "rgb(0, 128, 0)");
  });
});

Deno.test("page.goto() reports a 401 as a status, and a 200 with the token header", async () => {
  await using server = servePage();
  const base = `http://127.0.0.1:${server.addr.port}`;
  await withBrowser(async (browser) => {
    const anonymous = await openPage(browser, `${base}/`);
    assert.equal(await anonymous.goto(`${base}/private`), 401);
    assert.equal(anonymous.status, 401);
    assert.equal(await anonymous.text("body"), "Unauthorized");
    assert.equal(await anonymous.goto(`${base}/missing`), 404);

    const signedIn = await openPage(browser, `${base}/private`, {
      headers: { authorization: `Bearer ${TOKEN}` },
    });
    assert.equal(signedIn.status, 200);
    assert.equal(await signedIn.text("#badge"), "0.75");
  });
});

Deno.test("page.screenshot() writes a PNG into the screenshots folder", async () => {
  await using server = servePage();
  await withBrowser(async (browser) => {
    const page = await openPage(browser, `http://127.0.0.1:${server.addr.port}/`, {
      viewport: { width: 400, height: 300 },
    });
    const path = await page.screenshot("browser_harness");
    assert.equal(path, `${SCREENSHOT_DIR}browser_harness.png`);
    const png = await Deno.readFile(path);
    assert.deepEqual([...png.subarray(0, 8)], [0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a]);
    // IHDR: width and height, big-endian, at bytes 16..23.
    const view = new DataView(png.buffer, png.byteOffset);
    assert.deepEqual([view.getUint32(16), view.getUint32(20)], [400, 300]);
    await assert.rejects(page.screenshot("../escape"), TypeError);
  });
});

Deno.test("withBrowser() leaves no browser process or profile, also when its body throws", async () => {
  for (const fails of [false, true]) {
    let seen: { pid: number; userDataDir: string } | undefined;
    const run = withBrowser(async (browser) => {
      seen = browser.process();
      assert.equal(await exists(`/proc/${seen.pid}`), true);
      assert.equal(await exists(seen.userDataDir), true);
      if (fails) throw new Error("the body failed");
    });
    if (fails) await assert.rejects(run, /the body failed/);
    else await run;
    assert.ok(seen);
    assert.equal(await exists(`/proc/${seen.pid}`), false, `browser ${seen.pid} still runs`);
    assert.equal(await exists(seen.userDataDir), false, `${seen.userDataDir} is left`);
  }
});

Deno.test("browserAvailable() names the apt-get install when Chromium is missing", async () => {
  const missing = await browserAvailable("/nonexistent/chromium");
  assert.equal(missing.available, false);
  assert.match(!missing.available ? missing.reason : "", /apt-get install -y chromium/);
  assert.match(!missing.available ? missing.reason : "", /"\/nonexistent\/chromium"/);
});
