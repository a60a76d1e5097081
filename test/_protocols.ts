/**
 * One agent conversation spoken over each of the three agent protocols, for tests that must
 * hold over all of them: a request from a system prompt, tools and a question; the next request
 * from the last one and its reply (the reply echoed as a client echoes it, a tool result for its
 * first call, or a new user message); and the reply read back from JSON or from the stream, with
 * the text the client read.
 *
 * @module
 */
import assert from "node:assert/strict";
import { sseEvents } from "./_sse.ts";
import type { TestGateway } from "./_gateway.ts";

/** A tool as the test offers it: a name and a JSON schema. */
export interface TestTool {
  readonly name: string;
  readonly schema?: Record<string, unknown>;
}

/** What a conversation starts from. */
export interface Opening {
  readonly system?: string;
  readonly tools: readonly TestTool[];
  readonly question: string;
  readonly stream?: boolean;
}

/** A reply as the client read it. */
export interface ReadReply {
  /** The reply in the protocol's own shape, to echo. */
  readonly reply: Record<string, unknown>;
  /** The texts the client read (reasoning and answer), in order; calls are not text. */
  readonly texts: string[];
  /** The tool calls, by name and input. */
  readonly calls: { name: string; input: Record<string, unknown> }[];
}

/** One protocol's requests and replies. */
export interface Protocol {
  readonly name: string;
  readonly path: string;
  first(opening: Opening): Record<string, unknown>;
  /** The request after `reply`: its first call answered with `result`, or else `question` asked. */
  next(
    request: Record<string, unknown>,
    reply: Record<string, unknown>,
    then: { result: string } | { question: string },
  ): Record<string, unknown>;
  /** `request` with another system prompt and other tools (what a helper re-sends). */
  retarget(
    request: Record<string, unknown>,
    system: string,
    tools: readonly TestTool[],
  ): Record<string, unknown>;
  read(text: string, stream: boolean): ReadReply;
}

const SCHEMA = { type: "object", properties: { command: { type: "string" } } };

export const MESSAGES: Protocol = {
  name: "Messages",
  path: "/v1/messages",
  first: (opening) => ({
    model: "m",
    max_tokens: 512,
    stream: opening.stream === true,
    ...(opening.system ? { system: opening.system } : {}),
    tools: messagesTools(opening.tools),
    messages: [{ role: "user", content: opening.question }],
  }),
  next: (request, reply, then) => {
    const content = reply.content as { type: string; id?: string }[];
    const use = content.find((block) => block.type === "tool_use");
    const after = "result" in then
      ? [{ type: "tool_result", tool_use_id: use!.id, content: then.result }]
      : then.question;
    return {
      ...request,
      messages: [
        ...(request.messages as unknown[]),
        { role: "assistant", content },
        { role: "user", content: after },
      ],
    };
  },
  retarget: (request, system, tools) => ({ ...request, system, tools: messagesTools(tools) }),
  read: (text, stream) => {
    if (!stream) {
      const reply = JSON.parse(text);
      return { reply, ...blocksRead(reply.content) };
    }
    // The message rebuilt from its events, each block from its deltas.
    const blocks: Record<string, unknown>[] = [];
    for (const { event, data } of sseEvents(text)) {
      const index = data.index as number;
      if (event === "content_block_start") {
        blocks[index] = structuredClone(data.content_block as Record<string, unknown>);
      }
      if (event !== "content_block_delta") continue;
      const delta = data.delta as Record<string, string>;
      const block = blocks[index];
      if (delta.type === "text_delta") block.text = `${block.text ?? ""}${delta.text}`;
      if (delta.type === "thinking_delta") {
        block.thinking = `${block.thinking ?? ""}${delta.thinking}`;
      }
      if (delta.type === "signature_delta") block.signature = delta.signature;
      if (delta.type === "input_json_delta") {
        block.json = `${(block.json as string | undefined) ?? ""}${delta.partial_json}`;
      }
    }
    for (const block of blocks) {
      if (block.type !== "tool_use") continue;
      block.input = JSON.parse((block.json as string | undefined) || "{}");
      delete block.json;
    }
    return { reply: { content: blocks }, ...blocksRead(blocks) };
  },
};

export const CHAT: Protocol = {
  name: "Chat Completions",
  path: "/v1/chat/completions",
  first: (opening) => ({
    model: "m",
    max_tokens: 512,
    stream: opening.stream === true,
    tools: chatTools(opening.tools),
    messages: [
      ...(opening.system ? [{ role: "system", content: opening.system }] : []),
      { role: "user", content: opening.question },
    ],
  }),
  next: (request, reply, then) => {
    const calls = (reply.tool_calls ?? []) as { id: string }[];
    const after = "result" in then
      ? { role: "tool", tool_call_id: calls[0].id, content: then.result }
      : { role: "user", content: then.question };
    return {
      ...request,
      messages: [...(request.messages as unknown[]), { role: "assistant", ...reply }, after],
    };
  },
  retarget: (request, system, tools) => {
    const messages = request.messages as { role: string }[];
    const rest = messages[0]?.role === "system" ? messages.slice(1) : messages;
    return {
      ...request,
      tools: chatTools(tools),
      messages: [{ role: "system", content: system }, ...rest],
    };
  },
  read: (text, stream) => {
    if (!stream) {
      const message = JSON.parse(text).choices[0].message;
      return { reply: message, ...chatRead(message) };
    }
    let reasoning = "";
    let content = "";
    const calls: { id: string; type: string; function: { name: string; arguments: string } }[] = [];
    for (const line of text.split("\n")) {
      if (!line.startsWith("data: {")) continue;
      const delta = JSON.parse(line.slice(6)).choices[0]?.delta ?? {};
      reasoning += delta.reasoning_content ?? "";
      content += delta.content ?? "";
      for (const piece of delta.tool_calls ?? []) {
        calls[piece.index] ??= {
          id: piece.id,
          type: "function",
          function: { name: "", arguments: "" },
        };
        calls[piece.index].function.name += piece.function?.name ?? "";
        calls[piece.index].function.arguments += piece.function?.arguments ?? "";
      }
    }
    const message = {
      role: "assistant",
      content,
      ...(reasoning ? { reasoning_content: reasoning } : {}),
      ...(calls.length > 0 ? { tool_calls: calls } : {}),
    };
    return { reply: message, ...chatRead(message) };
  },
};

export const RESPONSES: Protocol = {
  name: "Responses",
  path: "/v1/responses",
  first: (opening) => ({
    model: "m",
    max_output_tokens: 512,
    stream: opening.stream === true,
    ...(opening.system ? { instructions: opening.system } : {}),
    tools: responsesTools(opening.tools),
    input: [{ role: "user", content: opening.question }],
  }),
  next: (request, reply, then) => {
    const output = reply.output as { type: string; call_id?: string }[];
    const call = output.find((item) => item.type === "function_call");
    const after = "result" in then
      ? { type: "function_call_output", call_id: call!.call_id, output: then.result }
      : { role: "user", content: then.question };
    return { ...request, input: [...(request.input as unknown[]), ...output, after] };
  },
  retarget: (request, system, tools) => ({
    ...request,
    instructions: system,
    tools: responsesTools(tools),
  }),
  read: (text, stream) => {
    const response = stream
      ? sseEvents(text).find(({ event }) => event === "response.completed")!.data
        .response as Record<string, unknown>
      : JSON.parse(text);
    const output = response.output as {
      type: string;
      name?: string;
      arguments?: string;
      content?: { text: string }[];
    }[];
    const calls = output.flatMap((item) =>
      item.type === "function_call"
        ? [{ name: item.name!, input: JSON.parse(item.arguments!) }]
        : []
    );
    let texts = output.flatMap((item) =>
      item.type === "function_call" ? [] : (item.content ?? []).map((part) => part.text)
    );
    if (stream) {
      // Streamed: the texts as their deltas add up.
      const streamed = new Map<string, string>();
      for (const { event, data } of sseEvents(text)) {
        if (event !== "response.output_text.delta" && event !== "response.reasoning_text.delta") {
          continue;
        }
        const key = String(data.item_id);
        streamed.set(key, (streamed.get(key) ?? "") + (data.delta as string));
      }
      texts = [...streamed.values()];
    }
    return { reply: response, texts, calls };
  },
};

/** The three protocols. */
export const PROTOCOLS: readonly Protocol[] = [MESSAGES, CHAT, RESPONSES];

/** Sends `request` over `protocol` with `token`; the reply as read, and the raw body. */
export async function send(
  gw: TestGateway,
  protocol: Protocol,
  token: string,
  request: Record<string, unknown>,
): Promise<ReadReply & { raw: string }> {
  const response = await gw.fetch(protocol.path, {
    method: "POST",
    headers: { authorization: `Bearer ${token}`, "content-type": "application/json" },
    body: JSON.stringify(request),
  });
  const raw = await response.text();
  assert.equal(response.status, 200, raw);
  return { ...protocol.read(raw, request.stream === true), raw };
}

function messagesTools(tools: readonly TestTool[]) {
  return tools.map((tool) => ({ name: tool.name, input_schema: tool.schema ?? SCHEMA }));
}

function chatTools(tools: readonly TestTool[]) {
  return tools.map((tool) => ({
    type: "function",
    function: { name: tool.name, parameters: tool.schema ?? SCHEMA },
  }));
}

function responsesTools(tools: readonly TestTool[]) {
  return tools.map((tool) => ({
    type: "function",
    name: tool.name,
    parameters: tool.schema ?? SCHEMA,
  }));
}

function blocksRead(content: Record<string, unknown>[]) {
  return {
    texts: content.flatMap((block) =>
      block.type === "text"
        ? [block.text as string]
        : block.type === "thinking"
        ? [block.thinking as string]
        : []
    ),
    calls: content.flatMap((block) =>
      block.type === "tool_use"
        ? [{ name: block.name as string, input: block.input as Record<string, unknown> }]
        : []
    ),
  };
}

function chatRead(message: {
  content?: string | null;
  reasoning_content?: string;
  tool_calls?: { function: { name: string; arguments: string } }[];
}) {
  return {
    texts: [message.reasoning_content, message.content].filter((t): t is string => !!t),
    calls: (message.tool_calls ?? []).map((call) => ({
      name: call.function.name,
      input: JSON.parse(call.function.arguments),
    })),
  };
}
