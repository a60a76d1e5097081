/**
 * The real Claude Code CLI (headless) against the gateway and the scripted engine, in a
 * temporary git repository: it runs Bash, writes a file, runs it, and answers; the recorded
 * chain is token-exact.
 */
import assert from "node:assert/strict";
import { episodeReplies as episode, PROMPT } from "../../fixtures/claude_code/record.ts";
import { assertChainExact } from "../_chain_exact.ts";
import { runClaude, tempRepo } from "../_claude.ts";
import { type SampleJson, startGateway, type TestGateway } from "../_gateway.ts";
import type { Script } from "../../lib/scripted_engine/mod.ts";
import { fixtureImage, padRuns, visionGateway } from "../_vision.ts";

const FINAL = 'Done: hello.sh prints "hello from the script".';

/** The core slice's token-exactness checks on a CLI-driven session; `failedCalls` got no turn. */
async function assertTokenExact(gw: TestGateway, sessionId: string, failedCalls = 0) {
  const calls = gw.engine.calls.filter((call) =>
    call.output !== undefined && call.output.length > 0
  );
  assert.equal(gw.engine.calls.length, calls.length + failedCalls);
  const samples = await gw.samples(sessionId);
  assertChainExact(calls, samples);
  assert.ok(
    samples[0].turns.every((turn) => turn.flags.length === 0),
    JSON.stringify(samples[0].turns),
  );
  return { calls };
}

/**
 * The model's side of Claude Code reading plot.png in `repo`: a Read call, then `reply` once the
 * prompt ends with the tool result (`resultEnd`, as the served template closes it).
 */
function readPng(repo: string, resultEnd: string, reply: string): Script {
  return (_call, text) =>
    text().endsWith(resultEnd)
      ? reply
      : `<tool_call>\n${
        JSON.stringify({ name: "Read", arguments: { file_path: `${repo}/plot.png` } })
      }\n</tool_call>`;
}

/** Claude Code asked to describe plot.png: it answers `answer`, in two token-exact turns. */
async function runReadPng(gw: TestGateway, repo: string, answer: string) {
  const { id, token } = await gw.openSession();
  const run = await runClaude({
    baseUrl: gw.url,
    token,
    cwd: repo,
    prompt: "Look at plot.png and describe it.",
  });
  assert.equal(run.code, 0, run.stderr);
  assert.equal(run.result?.result, answer);
  const { calls } = await assertTokenExact(gw, id);
  assert.equal(calls.length, 2, "the Read, then the next turn");
  return { id, calls };
}

Deno.test("Claude Code runs Bash, writes and runs a file, and answers; the chain is token-exact", async () => {
  const repo = await tempRepo();
  const gw = await startGateway({ script: episode(repo) });
  try {
    const { id, token } = await gw.openSession({ agent: "claude-code" });
    const run = await runClaude({
      baseUrl: gw.url,
      token,
      cwd: repo,
      prompt: PROMPT,
    });
    assert.equal(run.code, 0, run.stderr);
    assert.equal(run.result?.subtype, "success");
    assert.equal(run.result?.result, FINAL);
    assert.equal(
      await Deno.readTextFile(`${repo}/hello.sh`),
      "#!/bin/sh\necho hello from the script\n",
    );
    const { calls } = await assertTokenExact(gw, id);
    assert.equal(calls.length, 4);
    // The script's output went back to the model as a tool result in the last delta.
    const lastDelta = calls[3].inputIds.slice(calls[2].inputIds.length + calls[2].output!.length);
    assert.match(
      gw.tokenizer.decode(lastDelta),
      /<tool_response>\nhello from the script\n<\/tool_response>/,
    );
    // Every request was a streaming /v1/messages call that the gateway answered with 200.
    const turns = gw.exchanges.filter((e) => e.path.startsWith("/v1/messages"));
    assert.deepEqual(
      turns.map((e) => [e.path, e.status]),
      turns.map(() => ["/v1/messages?beta=true", 200]),
    );
  } finally {
    await gw.close();
    await Deno.remove(repo, { recursive: true });
  }
});

Deno.test("Claude Code retries a 529 from an unavailable engine and finishes", async () => {
  const repo = await tempRepo();
  // The production keep-alive interval: the engine's 503 is answered as a 529 before the stream
  // starts (the tests' 50 ms would race the first turn's prompt encoding).
  const gw = await startGateway({
    script: episode(repo),
    env: { RETRY_AFTER_MS: "200", PING_INTERVAL_MS: "10000" },
  });
  try {
    const { id, token } = await gw.openSession();
    gw.engine.fault({ kind: "unavailable" });
    const run = await runClaude({ baseUrl: gw.url, token, cwd: repo, prompt: "Greet." });
    assert.equal(run.code, 0, run.stderr);
    assert.equal(run.result?.result, FINAL);
    const retries = run.events.filter((e) => e.type === "system" && e.subtype === "api_retry");
    assert.equal(retries.length, 1);
    assert.equal(retries[0].error_status, 529);
    const statuses = gw.exchanges.filter((e) => e.path.startsWith("/v1/messages")).map((e) =>
      e.status
    );
    assert.deepEqual(statuses, [529, 200, 200, 200, 200]);
    const overloaded = gw.exchanges.find((e) => e.status === 529)!;
    assert.match(await overloaded.response, /"overloaded_error"/);
    await assertTokenExact(gw, id, 1);
  } finally {
    await gw.close();
    await Deno.remove(repo, { recursive: true });
  }
});

Deno.test("Claude Code waits through a generation slower than the ping interval", async () => {
  const repo = await tempRepo();
  // About 30 tokens at 25 ms each: each turn takes several 100 ms ping intervals.
  const gw = await startGateway({
    script: episode(repo),
    latencyMs: 25,
    env: { PING_INTERVAL_MS: "100" },
  });
  try {
    const { id, token } = await gw.openSession();
    const run = await runClaude({ baseUrl: gw.url, token, cwd: repo, prompt: "Greet." });
    assert.equal(run.code, 0, run.stderr);
    assert.equal(run.result?.result, FINAL);
    const streams = await Promise.all(
      gw.exchanges.filter((e) => e.path.startsWith("/v1/messages")).map((e) => e.response),
    );
    assert.ok(
      streams.every((text) => text.includes("event: ping\n")),
      "every turn was kept alive by pings",
    );
    await assertTokenExact(gw, id);
  } finally {
    await gw.close();
    await Deno.remove(repo, { recursive: true });
  }
});

Deno.test("Claude Code reads a PNG in its work tree and goes on to its next turn; the model reads a placeholder, the chain is token-exact", async () => {
  const repo = await tempRepo();
  const png = await Deno.readFile(new URL("../../fixtures/images/plot.png", import.meta.url));
  await Deno.writeFile(`${repo}/plot.png`, png);
  const answer = "The plot is a 64 by 48 image.";
  const gw = await startGateway({
    script: readPng(repo, "</tool_response><|im_end|>\n<|im_start|>assistant\n", answer),
  });
  try {
    const { calls } = await runReadPng(gw, repo, answer);
    // The CLI sent the image itself inside the tool result…
    const second = JSON.parse(
      gw.exchanges.filter((e) => e.path.startsWith("/v1/messages"))[1].body,
    );
    const [result] = second.messages.at(-1).content;
    assert.equal(result.type, "tool_result");
    assert.equal(result.content[0].type, "image");
    assert.equal(result.content[0].source.media_type, "image/png");
    const data: string = result.content[0].source.data;
    // …and the model read a placeholder naming its format and size, not its bytes.
    const delta = gw.tokenizer.decode(
      calls[1].inputIds.slice(calls[0].inputIds.length + calls[0].output!.length),
    );
    assert.equal(
      delta,
      "\n<|im_start|>user\n<tool_response>\n" +
        "[image omitted (PNG, 64×48 pixels, 6321 bytes): the served model reads text only]\n" +
        "</tool_response><|im_end|>\n<|im_start|>assistant\n",
    );
    assert.ok(!gw.tokenizer.decode(calls[1].inputIds).includes(data.slice(0, 64)));
  } finally {
    await gw.close();
    await Deno.remove(repo, { recursive: true });
  }
});

Deno.test("Claude Code reads a PNG for a vision model: the engine gets the image and its expanded pads, the chain is token-exact, the export names the image", async () => {
  const repo = await tempRepo();
  const png = await fixtureImage("plot.png");
  await Deno.writeFile(`${repo}/plot.png`, png.bytes);
  const answer = "The plot is a 64 by 48 image.";
  // Qwen3-VL Thinking's generation prompt opens the reasoning.
  const { gw, padId, close } = await visionGateway(
    readPng(
      repo,
      "</tool_response><|im_end|>\n<|im_start|>assistant\n<think>\n",
      `It shows a plot.\n</think>\n\n${answer}`,
    ),
  );
  try {
    const { id, calls } = await runReadPng(gw, repo, answer);
    // The model read the image: its pads, as many as Qwen3-VL's processor gives a 64×48 image,
    // in the tool result, and the engine was given its bytes.
    const delta = calls[1].inputIds.slice(calls[0].inputIds.length + calls[0].output!.length);
    assert.deepEqual(padRuns(delta, padId), [png.tokens]);
    assert.equal(
      gw.tokenizer.decode(delta),
      "\n<|im_start|>user\n<tool_response>\n<|vision_start|>" +
        "<|image_pad|>".repeat(png.tokens) +
        "<|vision_end|>\n</tool_response><|im_end|>\n<|im_start|>assistant\n<think>\n",
    );
    assert.deepEqual(calls[0].images ?? [], []);
    assert.deepEqual(calls[1].images?.map((image) => image.digest), [png.digest]);
    const [sample] = await gw.samples(id) as (SampleJson & { images: { digest: string }[] })[];
    assert.deepEqual(sample.images.map((image) => image.digest), [png.digest]);
  } finally {
    await close();
    await Deno.remove(repo, { recursive: true });
  }
});
