/**
 * Images sent to a model that reads text, over each protocol, under the default
 * `IMAGE_POLICY=placeholder`: an Anthropic image block (in a user message, and inside a tool
 * result as Claude Code's Read of a PNG sends it), an OpenAI `image_url` part and a Responses
 * `input_image` part (in a user message, and in a function call's output) each become a
 * placeholder naming the format and size, the image's bytes stay out of the prompt, and the
 * episode goes on as one exact chain. `IMAGE_POLICY=reject` refuses them with a 400.
 */
import assert from "node:assert/strict";
import { Buffer } from "node:buffer";
import { assertChainExact } from "../_chain_exact.ts";
import { startGateway } from "../_gateway.ts";
import { CHAT, MESSAGES, type Protocol, RESPONSES, send } from "../_protocols.ts";

const png = await Deno.readFile(new URL("../../fixtures/images/plot.png", import.meta.url));
const DATA = Buffer.from(png).toString("base64");
const PLACEHOLDER =
  "[image omitted (PNG, 64×48 pixels, 6321 bytes): the served model reads text only]";

/** Each protocol's image in a user message, and its tool result holding one. */
const IMAGES: { protocol: Protocol; part: unknown; result: unknown }[] = [
  {
    protocol: MESSAGES,
    part: { type: "image", source: { type: "base64", media_type: "image/png", data: DATA } },
    result: [
      { type: "text", text: "the plot:" },
      { type: "image", source: { type: "base64", media_type: "image/png", data: DATA } },
    ],
  },
  {
    protocol: CHAT,
    part: { type: "image_url", image_url: { url: `data:image/png;base64,${DATA}` } },
    // A Chat Completions tool message holds text only: the image comes in the user turn.
    result: "the plot is attached above",
  },
  {
    protocol: RESPONSES,
    part: { type: "input_image", image_url: `data:image/png;base64,${DATA}` },
    result: [
      { type: "input_text", text: "the plot:" },
      { type: "input_image", image_url: `data:image/png;base64,${DATA}` },
    ],
  },
];

/** `request` with its first user message holding a text part and `part`. */
function withImage(protocol: Protocol, request: Record<string, unknown>, part: unknown) {
  const text = protocol === RESPONSES ? { type: "input_text", text: "Look:" } : {
    type: "text",
    text: "Look:",
  };
  const key = protocol === RESPONSES ? "input" : "messages";
  const messages = structuredClone(request[key]) as { role: string; content: unknown }[];
  const user = messages.find((message) => message.role === "user")!;
  user.content = [text, part];
  return { ...request, [key]: messages };
}

for (const { protocol, part, result } of IMAGES) {
  Deno.test(`${protocol.name}: images become placeholders naming their format and size, and the episode goes on exactly`, async () => {
    const call = `<tool_call>\n{"name": "Bash", "arguments": {"command": "plot"}}\n</tool_call>`;
    const gw = await startGateway({ script: [call, "A 64 by 48 gradient."] });
    try {
      const { id, token } = await gw.openSession();
      let request = withImage(
        protocol,
        protocol.first({ tools: [{ name: "Bash" }], question: "Look:" }),
        part,
      );
      const first = await send(gw, protocol, token, request);
      request = protocol.next(request, first.reply, { result: "" });
      // The tool's output, as the protocol carries it: with an image where it can.
      const key = protocol === RESPONSES ? "input" : "messages";
      const items = request[key] as Record<string, unknown>[];
      const last = items.at(-1)!;
      if (protocol === MESSAGES) (last.content as Record<string, unknown>[])[0].content = result;
      else if (protocol === CHAT) last.content = result;
      else last.output = result;
      const second = await send(gw, protocol, token, request);
      assert.deepEqual(second.texts, ["A 64 by 48 gradient."]);

      const calls = gw.engine.calls;
      assertChainExact(calls, await gw.samples(id), protocol.name);
      const prompt = gw.tokenizer.decode(calls[1].inputIds);
      assert.ok(prompt.includes(`Look:\n${PLACEHOLDER}<|im_end|>`), prompt.slice(-600));
      if (protocol !== CHAT) {
        assert.ok(prompt.includes(`<tool_response>\nthe plot:\n${PLACEHOLDER}\n</tool_response>`));
      }
      assert.ok(!prompt.includes(DATA.slice(0, 40)), "the bytes stay out of the prompt");
    } finally {
      await gw.close();
    }
  });
}

Deno.test("IMAGE_POLICY=reject refuses an image over each protocol with a 400 naming it", async () => {
  const gw = await startGateway({ env: { IMAGE_POLICY: "reject" } });
  try {
    const { token } = await gw.openSession();
    for (const { protocol, part } of IMAGES) {
      const request = withImage(
        protocol,
        protocol.first({ tools: [{ name: "Bash" }], question: "Look:" }),
        part,
      );
      const response = await gw.fetch(protocol.path, {
        method: "POST",
        headers: { authorization: `Bearer ${token}`, "content-type": "application/json" },
        body: JSON.stringify(request),
      });
      const text = await response.text();
      assert.equal(response.status, 400, text);
      assert.match(text, /content\.1: (image blocks|image_url parts|input_image parts) are not/);
    }
    assert.equal(gw.engine.calls.length, 0);
  } finally {
    await gw.close();
  }
});
