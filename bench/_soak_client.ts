/**
 * The soak's agents: episodes shaped like Claude Code's (its recorded system prompt, tools,
 * headers and first messages; thinking and tool_use rounds; tool results of many sizes; a history
 * that grows), sent with the real Anthropic SDK (streaming, `x-stainless-retry-count`, its
 * retries on 5xx, 529 and connection errors) to whichever gateway is up. A turn whose retries run
 * out, or whose stream breaks, is sent again with the same body, as Claude Code does.
 *
 * @module
 */
import Anthropic from "@anthropic-ai/sdk";
import type { Random } from "./_random.ts";
import { sleep } from "../lib/timing/mod.ts";

/** The parts of a recorded Claude Code request every episode starts from. */
export interface ClaudeCodeShape {
  /** The body without `messages` and `stream`: model, system, tools, thinking, metadata… */
  readonly body: Record<string, unknown>;
  /** Its headers, less those the SDK sets itself and the credentials. */
  readonly headers: Record<string, string>;
  /** Its first messages: the user's task (last text block) and the environment. */
  readonly messages: readonly Record<string, unknown>[];
}

/** The first request of `fixtures/claude_code/episode.json`, as a shape to send again. */
export async function claudeCodeShape(): Promise<ClaudeCodeShape> {
  const file = new URL("../fixtures/claude_code/episode.json", import.meta.url);
  const episode = JSON.parse((await Deno.readTextFile(file)).replaceAll("{{REPO}}", "/tmp/soak"));
  const { messages, stream: _, ...body } = episode.requests[0].body;
  const headers = Object.fromEntries(
    Object.entries(episode.requests[0].headers as Record<string, string>).filter(([name]) =>
      !/^(x-stainless-|authorization$|content-type$|accept$|content-length$)/.test(name)
    ),
  );
  return { body, headers, messages };
}

/** One episode (one session) as its agent saw it. */
export interface Episode {
  readonly id: string;
  /** Engine request ids of the replies the agent accepted (HTTP 200, whole stream), in order. */
  readonly rids: string[];
  closed: boolean;
  /** Why the agent gave up on the episode, if it did. */
  unfinished: string | null;
}

/** What the agents counted. */
export interface ClientStats {
  /** Replies accepted. */
  accepted: number;
  /** Requests sent again after a failed attempt (by the SDK or by the agent). */
  retried: number;
  /** Accepted replies whose turn an earlier attempt had generated: answered from the record. */
  replayed: number;
  connectionErrors: number;
  /** Whole replies the soak threw away before the agent read them (so it retries). */
  repliesLost: number;
  /** Streams that ended without `message_stop` or with an `error` event. */
  brokenStreams: number;
  /** HTTP statuses of `/v1/messages` attempts. */
  readonly statuses: Record<number, number>;
  /** Milliseconds from a turn's first attempt to its accepted reply. */
  readonly latencies: number[];
  /** Requests refused for good (a 4xx that is not retried) and 500s: the gateway's fault. */
  readonly errors: string[];
  readonly episodes: Episode[];
}

/** An empty {@linkcode ClientStats}. */
export function newClientStats(): ClientStats {
  return {
    accepted: 0,
    retried: 0,
    replayed: 0,
    connectionErrors: 0,
    repliesLost: 0,
    brokenStreams: 0,
    statuses: {},
    latencies: [],
    errors: [],
    episodes: [],
  };
}

/** What an agent needs. */
export interface ClientOptions {
  readonly shape: ClaudeCodeShape;
  readonly random: Random;
  /** URLs of the gateways up now; each attempt picks one. */
  readonly gateways: () => readonly string[];
  /** The gateway of the trainer API (sessions are opened and closed there). */
  readonly trainer: string;
  readonly adminToken: string;
  /** When the engine first received a call (`Date.now()`), to tell replays. */
  readonly receivedAt: (rid: string) => number | undefined;
  readonly turnsPerEpisode: readonly [number, number];
  readonly toolResultLines: readonly [number, number];
  /** An episode ends once its prompt passes this many tokens. */
  readonly maxPromptTokens: number;
  /** The share of whole replies thrown away before the agent reads them. */
  readonly replyLoss: number;
  /** No turn starts after this time (`Date.now()`). */
  readonly deadline: number;
  /** A turn still failing at this time is given up. */
  readonly giveUpAt: number;
}

/** Runs episodes one after the other until the deadline. */
export async function runAgent(slot: number, options: ClientOptions, stats: ClientStats) {
  while (Date.now() < options.deadline) {
    let opened: { id: string; token: string };
    try {
      opened = await trainerCall(options, "/sessions", { metadata: { soak: slot } });
    } catch (error) {
      stats.errors.push(`agent ${slot} cannot open a session: ${error}`);
      return;
    }
    const episode: Episode = { id: opened.id, rids: [], closed: false, unfinished: null };
    stats.episodes.push(episode);
    try {
      await runEpisode(episode, opened.token, options, stats);
    } catch (error) {
      episode.unfinished = String(error).slice(0, 300);
    }
    try {
      await trainerCall(options, `/sessions/${opened.id}/close`, {});
      episode.closed = true;
    } catch (error) {
      stats.errors.push(`agent ${slot} cannot close ${opened.id}: ${error}`);
    }
  }
}

async function runEpisode(
  episode: Episode,
  token: string,
  options: ClientOptions,
  stats: ClientStats,
) {
  const { random, shape } = options;
  let lastAttemptAt = 0;
  let attempts = 0;
  const client = new Anthropic({
    apiKey: token,
    baseURL: "http://gateway.invalid",
    maxRetries: 4,
    timeout: 60_000,
    defaultHeaders: { ...shape.headers, "x-claude-code-session-id": crypto.randomUUID() },
    fetch: async (input: string | URL | Request, init?: RequestInit) => {
      const url = new URL(input instanceof Request ? input.url : input);
      const target = `${random.pick(options.gateways())}${url.pathname}${url.search}`;
      lastAttemptAt = Date.now();
      attempts++;
      let response: Response;
      try {
        response = await fetch(target, init);
      } catch (error) {
        stats.connectionErrors++;
        throw error;
      }
      stats.statuses[response.status] = (stats.statuses[response.status] ?? 0) + 1;
      if (response.status === 500) {
        stats.errors.push(`500 on /v1/messages: ${(await response.clone().text()).slice(0, 300)}`);
      }
      if (response.ok && random.next() < options.replyLoss) {
        // The whole reply arrived (so its turn is committed) but never reaches the agent, as when
        // a proxy on the way back gives up: the SDK sends the same request again.
        const whole = await response.text().then(
          (text) => text.includes("message_stop"),
          () => false,
        );
        if (whole) {
          stats.repliesLost++;
          throw new TypeError("The reply was lost on its way back (injected by the soak)");
        }
        throw new TypeError("The reply broke off");
      }
      return response;
    },
  });
  const messages = structuredClone(shape.messages) as Record<string, unknown>[];
  const task = (messages[0].content as { text: string }[]).at(-1)!;
  task.text = `${episode.id}: ${task.text}`;
  const turns = random.between(...options.turnsPerEpisode);
  for (let turn = 0; turn < turns && Date.now() < options.deadline; turn++) {
    const body = { ...shape.body, messages } as unknown as Anthropic.MessageStreamParams;
    const first = Date.now();
    attempts = 0;
    let reply: Anthropic.Message | null = null;
    for (let failures = 0; !reply; failures++) {
      try {
        reply = await client.messages.stream(body).finalMessage();
      } catch (error) {
        if (permanent(error)) throw error;
        if (!(error instanceof Anthropic.APIConnectionError)) {
          stats.brokenStreams++;
          if (error instanceof Anthropic.APIError && error.type === "api_error") {
            stats.errors.push(`stream error: ${error.message}`);
          }
        }
        if (Date.now() > options.giveUpAt) throw error;
        await sleep(Math.min(8000, 500 * 2 ** failures));
      }
    }
    stats.retried += attempts - 1;
    const rid = reply.id.replace(/^msg_/, "");
    episode.rids.push(rid);
    stats.accepted++;
    stats.latencies.push(Date.now() - first);
    if ((options.receivedAt(rid) ?? Infinity) < lastAttemptAt) stats.replayed++;
    messages.push({ role: "assistant", content: reply.content });
    const uses = reply.content.filter((block) => block.type === "tool_use");
    messages.push({
      role: "user",
      content: uses.length > 0
        ? uses.map((use) => ({
          tool_use_id: use.id,
          type: "tool_result",
          content: toolOutput(random, random.between(...options.toolResultLines)),
          is_error: false,
        }))
        : [{ type: "text", text: "Now run the whole suite and fix what still fails." }],
    });
    moveCacheMark(messages);
    if (reply.usage.input_tokens > options.maxPromptTokens) break;
  }
}

/** A 4xx other than 408, 409 and 429: sending the request again cannot help. */
function permanent(error: unknown): boolean {
  return error instanceof Anthropic.APIError && error.status !== undefined &&
    error.status >= 400 && error.status < 500 && ![408, 409, 429].includes(error.status);
}

/** Claude Code marks the last block of the conversation for caching, and only that one. */
function moveCacheMark(messages: Record<string, unknown>[]) {
  for (const message of messages.slice(2)) {
    if (!Array.isArray(message.content)) continue;
    for (const block of message.content as Record<string, unknown>[]) delete block.cache_control;
  }
  const last = (messages.at(-1)!.content as Record<string, unknown>[]).at(-1)!;
  last.cache_control = { type: "ephemeral" };
}

/** Tool output of `lines` lines of code-like text (about 14 tokens a line). */
function toolOutput(random: Random, lines: number): string {
  const words = ["value", "parse", "header", "buffer", "result", "chain", "token", "index"];
  return Array.from(
    { length: lines },
    (_, i) =>
      `src/${random.pick(words)}.ts:${i + 1}: const ${random.pick(words)}${i} = ${
        random.pick(words)
      }(${random.between(0, 9999)});`,
  ).join("\n");
}

/** A trainer API call on the stable gateway, retried on 5xx and connection errors. */
async function trainerCall(options: ClientOptions, path: string, body: unknown) {
  for (let attempt = 0;; attempt++) {
    try {
      const response = await fetch(`${options.trainer}${path}`, {
        method: "POST",
        headers: {
          authorization: `Bearer ${options.adminToken}`,
          "content-type": "application/json",
        },
        body: JSON.stringify(body),
      });
      const json = await response.json();
      if (response.ok) return json;
      if (response.status < 500 || attempt >= 20) {
        throw new Error(`POST ${path}: ${response.status} ${JSON.stringify(json)}`);
      }
    } catch (error) {
      if (attempt >= 20) throw error;
    }
    await sleep(Math.min(4000, 200 * 2 ** attempt));
  }
}
