/**
 * Headless Chromium for tests of the gateway's pages: Debian's `/usr/bin/chromium`, driven by
 * playwright-core (pinned in deno.json, installed from deno.lock; it downloads no browser of its
 * own). `.ci/run` installs the Debian package, so a test that needs the browser fails, naming
 * `apt-get install chromium`, instead of skipping when the browser is missing.
 *
 * Each {@linkcode openPage} gets its own browser context: its cookies and headers are its own.
 * Screenshots land in `test_artifacts/screenshots/` (git-ignored, kept by CI as artifacts).
 *
 * @example
 * ```ts ignore
 * // Needs Debian's Chromium and a gateway serving its pages at `base`.
 * await withBrowser(async (browser) => {
 *   const page = await openPage(browser, `${base}/ui`, {
 *     headers: { authorization: "Bearer t" },
 *   });
 *   assert.equal(page.status, 200);
 *   await page.hover("#reward");
 *   assert.equal(await page.attribute("#reward", "title"), "Reward of the sample");
 *   await page.screenshot("ui_sessions");
 * });
 * ```
 *
 * @module
 */
import {
  type Browser as PlaywrightBrowser,
  chromium,
  type Page as PlaywrightPage,
} from "playwright-core";
import { hostProcesses } from "../lib/sandbox/mod.ts";

/** Debian's Chromium launcher (package `chromium`). */
export const CHROMIUM_PATH = "/usr/bin/chromium";

/**
 * Chromium's switches: headless, as root (no sandbox), no GPU, and no connection of its own to
 * anything (the network is closed: without these it retries Google's hosts at every start).
 * Shared memory goes to /tmp, since a container's /dev/shm may be 64 MiB (Debian's launcher
 * means to add this when /dev/shm is small, but its check breaks when findmnt prints two lines).
 */
export const CHROMIUM_FLAGS: readonly string[] = [
  "--headless",
  "--no-sandbox",
  "--disable-gpu",
  "--disable-quic",
  "--no-first-run",
  "--disable-background-networking",
  "--disable-component-update",
  "--disable-sync",
  "--disable-dev-shm-usage",
];

/** Captures a screenshot is tried, when Chromium refuses one (a transient hiccup of its own). */
const CAPTURE_ATTEMPTS = 3;

/** Where {@linkcode Page.screenshot} writes, an absolute path ending in a slash. */
export const SCREENSHOT_DIR = new URL("../test_artifacts/screenshots/", import.meta.url).pathname;

/** Longest a launch may take (a first start on a cold disk takes a few seconds). */
const LAUNCH_DEADLINE_MS = 30_000;
/** Longest one page action (navigation, waiting for an element) may take. */
const ACTION_DEADLINE_MS = 10_000;
/** Longest a graceful close may take before the browser is killed. */
const CLOSE_DEADLINE_MS = 10_000;

/** The page-side globals the functions below use (Deno's type-check has no DOM library). */
declare const getComputedStyle: (element: unknown) => { getPropertyValue(name: string): string };

/** Whether Chromium can run here, and if not, why and how to fix it. */
export type BrowserAvailability = { available: true; version: string } | {
  available: false;
  reason: string;
};

/**
 * Whether the Chromium at `path` runs; `reason` names the install command when it does not.
 * For a message only: tests call {@linkcode withBrowser}, which fails rather than skips.
 */
export async function browserAvailable(path = CHROMIUM_PATH): Promise<BrowserAvailability> {
  const fix = "install it with `apt-get install -y chromium` (as root or with sudo)";
  let output: Deno.CommandOutput;
  try {
    output = await new Deno.Command(path, { args: ["--version"], stdin: "null" }).output();
  } catch (error) {
    if (error instanceof Deno.errors.NotFound) {
      return { available: false, reason: `Chromium is missing at "${path}": ${fix}` };
    }
    throw error;
  }
  const version = new TextDecoder().decode(output.stdout).match(/Chromium ([\d.]+)/)?.[1];
  if (!output.success || !version) {
    const said = new TextDecoder().decode(output.stderr).trim().split("\n").at(-1);
    return { available: false, reason: `Chromium at "${path}" does not run (${said}): ${fix}` };
  }
  return { available: true, version };
}

/** A running Chromium, open for the length of one {@linkcode withBrowser} call. */
export interface Browser {
  /** Chromium's version, as "156.0.8078.79". */
  readonly version: string;
  /** The browser process and its temporary profile folder, while it runs. */
  process(): { pid: number; userDataDir: string };
  /** The underlying playwright-core browser, for what this module does not wrap. */
  readonly playwright: PlaywrightBrowser;
}

/** What a page sends with every request it makes. */
export interface PageOptions {
  /** Cookies set for the origin of the first URL. */
  readonly cookies?: Readonly<Record<string, string>>;
  /** Headers added to every request (an `authorization` header, say). */
  readonly headers?: Readonly<Record<string, string>>;
  /** The window size in CSS pixels; 1280×800 unless told. */
  readonly viewport?: { readonly width: number; readonly height: number };
}

/**
 * One tab. A `selector` is Playwright's: CSS (`#id`, `.class td`), or `text=Save`; reading
 * methods that take one wait for the element to be there and fail when it matches several.
 */
export interface Page {
  /** The HTTP status of the last document loaded by {@linkcode openPage} or `goto`. */
  readonly status: number;
  /** Uncaught page errors and `console.error` messages (failed loads among them), in order. */
  readonly errors: readonly string[];
  /** Loads `url` and resolves with its HTTP status (a 401 resolves, it does not throw). */
  goto(url: string): Promise<number>;
  /** The element's rendered text (`innerText`). */
  text(selector: string): Promise<string>;
  /** The element's attribute `name`, or null when it has none. */
  attribute(selector: string, name: string): Promise<string | null>;
  /** The element's computed CSS `property`, as "rgb(0, 128, 0)" for a colour. */
  style(selector: string, property: string): Promise<string>;
  /** Whether one element matches and is visible (no waiting). */
  visible(selector: string): Promise<boolean>;
  /** How many elements match now (no waiting). */
  count(selector: string): Promise<number>;
  /** Moves the mouse over the element, so `:hover` styles apply. */
  hover(selector: string): Promise<void>;
  /** Clicks the element. */
  click(selector: string): Promise<void>;
  /** Waits until an element matches and is visible. */
  waitFor(selector: string): Promise<void>;
  /** The value of a JavaScript expression, or of a function, run in the page. */
  evaluate<T>(expression: string | (() => T | Promise<T>)): Promise<T>;
  /** Writes a PNG of the viewport to `SCREENSHOT_DIR/<name>.png` and resolves with its path. */
  screenshot(name: string, options?: { fullPage?: boolean }): Promise<string>;
  /** Closes the tab and its cookies (the browser's close does it too). */
  close(): Promise<void>;
  /** The underlying playwright-core page, for what this interface does not wrap. */
  readonly playwright: PlaywrightPage;
}

/**
 * Runs `body` with a fresh headless Chromium and closes it afterwards, whether `body` resolves
 * or throws; a browser that does not close in time is killed. Its profile is a temporary
 * folder, removed on close. Fails, naming the install command, when Chromium is missing.
 */
export async function withBrowser<T>(body: (browser: Browser) => Promise<T>): Promise<T> {
  const availability = await browserAvailable();
  if (!availability.available) throw new Error(availability.reason);
  // A switch Chromium ignores, to find this browser's process among others (tests in parallel).
  const marker = `--rollout-gateway-test=${crypto.randomUUID()}`;
  const playwright = await chromium.launch({
    executablePath: CHROMIUM_PATH,
    args: [...CHROMIUM_FLAGS, marker],
    timeout: LAUNCH_DEADLINE_MS,
  });
  const process = () => {
    const found = browserProcess(marker);
    if (!found) throw new Error(`Cannot find the browser process: no command line has ${marker}`);
    return found;
  };
  try {
    return await body({ version: availability.version, process, playwright });
  } finally {
    const running = browserProcess(marker);
    let timer: ReturnType<typeof setTimeout> | undefined;
    const closed = await Promise.race([
      playwright.close().then(() => true, () => false),
      new Promise<false>((resolve) => timer = setTimeout(resolve, CLOSE_DEADLINE_MS, false)),
    ]).finally(() => clearTimeout(timer));
    if (!closed && running) {
      try {
        Deno.kill(running.pid, "SIGKILL");
      } catch { /* exited meanwhile */ }
      await Deno.remove(running.userDataDir, { recursive: true }).catch(() => {});
    }
  }
}

/** Opens a tab that sends `options`' cookies and headers, and loads `url` in it. */
export async function openPage(
  browser: Browser,
  url: string,
  options: PageOptions = {},
): Promise<Page> {
  const context = await browser.playwright.newContext({
    extraHTTPHeaders: { ...options.headers },
    viewport: options.viewport ?? { width: 1280, height: 800 },
  });
  try {
    context.setDefaultTimeout(ACTION_DEADLINE_MS);
    const cookies = Object.entries(options.cookies ?? {});
    if (cookies.length > 0) {
      await context.addCookies(cookies.map(([name, value]) => ({ name, value, url })));
    }
    const page = wrapPage(await context.newPage());
    await page.goto(url);
    return page;
  } catch (error) {
    await context.close();
    throw error;
  }
}

function wrapPage(playwright: PlaywrightPage): Page {
  let status = 0;
  const errors: string[] = [];
  playwright.on("pageerror", (error) => errors.push(error.message));
  playwright.on("console", (message) => {
    if (message.type() !== "error") return;
    // The browser's own request for /favicon.ico is not the page's doing.
    if (new URL(message.location().url || "about:blank").pathname === "/favicon.ico") return;
    errors.push(message.text());
  });
  const one = (selector: string) => playwright.locator(selector);
  return {
    get status() {
      return status;
    },
    errors,
    async goto(url) {
      const response = await playwright.goto(url);
      if (!response) throw new Error(`Loading "${url}" got no HTTP response`);
      return status = response.status();
    },
    text: (selector) => one(selector).innerText(),
    attribute: (selector, name) => one(selector).getAttribute(name),
    style: (selector, property) =>
      one(selector).evaluate(
        (element, property) => getComputedStyle(element).getPropertyValue(property),
        property,
      ),
    visible: (selector) => one(selector).isVisible(),
    count: (selector) => one(selector).count(),
    hover: (selector) => one(selector).hover(),
    click: (selector) => one(selector).click(),
    waitFor: (selector) => one(selector).waitFor({ state: "visible" }),
    evaluate: <T>(expression: string | (() => T | Promise<T>)) =>
      playwright.evaluate(expression) as Promise<T>,
    async screenshot(name, options = {}) {
      if (!/^[\w.-]+$/.test(name)) {
        throw new TypeError(`Cannot name a screenshot "${name}": use letters, digits, . _ -`);
      }
      await Deno.mkdir(SCREENSHOT_DIR, { recursive: true });
      const path = `${SCREENSHOT_DIR}${name}.png`;
      // Headless Chromium now and then refuses one capture ("Unable to capture screenshot")
      // and takes the same picture when asked again; any other error fails at once.
      for (let attempt = 1;; attempt++) {
        try {
          await playwright.screenshot({ path, fullPage: options.fullPage ?? false });
          return path;
        } catch (error) {
          const refused = String((error as Error).message).includes("Unable to capture screenshot");
          if (!refused || attempt === CAPTURE_ATTEMPTS) throw error;
        }
      }
    },
    close: () => playwright.context().close(),
    playwright,
  };
}

/** The browser process whose command line carries `marker`, and its `--user-data-dir`. */
function browserProcess(marker: string): { pid: number; userDataDir: string } | undefined {
  for (const { pid, argv } of hostProcesses()) {
    // Chromium's helpers (renderer, zygote) carry --type=…; the browser process does not.
    if (!argv.includes(marker) || argv.some((arg) => arg.startsWith("--type="))) continue;
    const userDataDir = argv.find((arg) => arg.startsWith("--user-data-dir="))?.slice(16);
    if (userDataDir) return { pid, userDataDir };
  }
  return undefined;
}
