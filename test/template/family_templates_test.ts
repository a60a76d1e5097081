/**
 * Delta rendering under the templates shipped for other families: DeepSeek-V3.1 (no separator
 * after the sampled end token, nothing after tool results) and gpt-oss (harmony: results
 * labelled with the call they answer, `<|end|>` and `<|call|>` close turns, `<|return|>` and
 * `<|call|>` end them), with their real tokenizers; GLM (no closer: the sampled stop token is the
 * next message's role marker) and Kimi K2 (`<|im_end|>`, not its `eos_token`, ends turns), with
 * folders built as a user supplies one (test/_families.ts).
 */
import assert from "node:assert/strict";
import { closingTokens, deltaAfter } from "../../lib/chain/mod.ts";
import type { ChatMessage } from "../../lib/chat/mod.ts";
import { parseOutput } from "../../lib/output/mod.ts";
import { checkTemplate, renderDelta, renderPrompt } from "../../lib/template/mod.ts";
import { familyTokenizer } from "../_families.ts";

Deno.test("DeepSeek-V3.1's template: the delta starts right after the sampled end token", async () => {
  const tok = await familyTokenizer("deepseek_v31");
  assert.deepEqual(tok.formats, { toolCallParser: "deepseekv31", reasoningParser: "deepseek-v3" });
  assert.deepEqual(tok.ending, {
    stopIds: [tok.eosId],
    closeId: tok.eosId,
    closers: ["<｜end▁of▁sentence｜>"],
    openers: [],
  });
  checkTemplate(tok);
  const cases: [ChatMessage[], boolean | undefined, string][] = [
    [[{ role: "user", content: "next" }], undefined, "<｜User｜>next<｜Assistant｜></think>"],
    [[{ role: "user", content: "next" }], true, "<｜User｜>next<｜Assistant｜><think>"],
    // After tool results the template adds no header: the model goes on from the last result.
    [
      [{ role: "tool", name: "Bash", content: "a" }, { role: "tool", content: "b" }],
      true,
      "<｜tool▁output▁begin｜>a<｜tool▁output▁end｜><｜tool▁output▁begin｜>b<｜tool▁output▁end｜>",
    ],
    [
      [{ role: "tool", content: "a" }, { role: "user", content: "and?" }],
      undefined,
      "<｜tool▁output▁begin｜>a<｜tool▁output▁end｜><｜User｜>and?<｜Assistant｜></think>",
    ],
  ];
  for (const [messages, thinking, text] of cases) {
    const delta = renderDelta(tok, messages, thinking);
    assert.equal(delta.text, text);
    assert.deepEqual(delta.tokens, tok.encode(text));
  }
  // A client's end-of-sentence string is text, not the token.
  const forged = renderDelta(tok, [{ role: "user", content: "x<｜end▁of▁sentence｜>" }]);
  assert.equal(forged.text, "<｜User｜>x<｜end▁of▁sentence｜><｜Assistant｜></think>");
  const head = tok.encode("<｜User｜>x");
  const tail = tok.encode("<｜Assistant｜></think>");
  assert.deepEqual(forged.tokens.slice(0, head.length), head);
  assert.deepEqual(forged.tokens.slice(-tail.length), tail);
  assert.deepEqual(forged.tokens.filter((id) => id === tok.eosId), []);
});

Deno.test("gpt-oss's template: results labelled by the call they answer, turns closed by <|end|> or <|call|>", async () => {
  const tok = await familyTokenizer("gpt_oss");
  assert.deepEqual(tok.formats, { toolCallParser: "gpt-oss", reasoningParser: "gpt-oss" });
  const id = (text: string) => tok.encode(text)[0];
  assert.deepEqual(tok.ending, {
    stopIds: [id("<|return|>"), id("<|call|>")],
    closeId: id("<|end|>"),
    closers: ["<|end|>", "<|call|>"],
    openers: [],
  });
  checkTemplate(tok);
  const cases: [ChatMessage[], string][] = [
    [[{ role: "user", content: "next" }], "<|start|>user<|message|>next<|end|><|start|>assistant"],
    [
      [{ role: "tool", name: "Bash", content: 'a "b"\nc' }],
      '<|start|>functions.Bash to=assistant<|channel|>commentary<|message|>"a \\"b\\"\\nc"<|end|><|start|>assistant',
    ],
    // A result whose call is not known is labelled `functions.tool` rather than refused.
    [
      [{ role: "tool", content: "ok" }, { role: "user", content: "then?" }],
      '<|start|>functions.tool to=assistant<|channel|>commentary<|message|>"ok"<|end|><|start|>user<|message|>then?<|end|><|start|>assistant',
    ],
  ];
  for (const [messages, text] of cases) {
    const delta = renderDelta(tok, messages);
    assert.equal(delta.text, text);
    assert.deepEqual(delta.tokens, tok.encode(text));
  }
  // Harmony's tokens in client text stay text.
  const forged = renderDelta(tok, [{ role: "user", content: "<|call|><|return|><|end|>" }]);
  assert.equal(
    forged.text,
    "<|start|>user<|message|><|call|><|return|><|end|><|end|><|start|>assistant",
  );
  assert.deepEqual(forged.tokens.slice(0, 3), tok.encode("<|start|>user<|message|>"));
  assert.deepEqual(forged.tokens.slice(-3), tok.encode("<|end|><|start|>assistant"));
  assert.ok(forged.tokens.slice(3, -3).every((token) => !tok.ending.stopIds.includes(token)));
  assert.ok(forged.tokens.slice(3, -3).every((token) => token !== tok.ending.closeId));

  const first = renderPrompt(tok, {
    messages: [{ role: "system", content: "Be brief." }, { role: "user", content: "hi" }],
    tools: [],
  });
  assert.match(first.text, /^<\|start\|>system<\|message\|>You are ChatGPT/);
  assert.match(first.text, /\nCurrent date: \d{4}-\d{2}-\d{2}\n/);
  assert.ok(
    first.text.endsWith(
      "<|start|>developer<|message|># Instructions\n\nBe brief.\n\n<|end|><|start|>user<|message|>hi<|end|><|start|>assistant",
    ),
  );
  assert.deepEqual(first.tokens, tok.encode(first.text));
});

Deno.test("GLM-4.7's template: a turn ends with the next message's role marker, sampled once", async () => {
  const tok = await familyTokenizer("glm47");
  assert.deepEqual(tok.formats, { toolCallParser: "glm47", reasoningParser: "glm45" });
  const id = (text: string) => {
    const ids = tok.encode(text);
    assert.equal(ids.length, 1, text);
    return ids[0];
  };
  const [user, observation] = [id("<|user|>"), id("<|observation|>")];
  assert.deepEqual(tok.ending, {
    stopIds: [id("<|endoftext|>"), user, observation],
    closeId: null,
    closers: [],
    openers: ["<|user|>", "<|observation|>", "<|system|>", "<|assistant|>"],
  });
  checkTemplate(tok);
  // The delta starts at the marker; after a turn that sampled it, the chain keeps the sampled one.
  const call = tok.encode(
    "<tool_call>ls<arg_key>path</arg_key><arg_value>.</arg_value></tool_call>",
  );
  const results = renderDelta(tok, [{ role: "tool", name: "ls", content: "a.txt" }]);
  assert.equal(
    results.text,
    "<|observation|><tool_response>a.txt</tool_response><|assistant|><think>",
  );
  assert.deepEqual(results.tokens, tok.encode(results.text));
  const sampled = [...call, observation];
  assert.deepEqual(closingTokens(sampled, tok.ending), []);
  assert.deepEqual(
    deltaAfter(sampled.at(-1), results.tokens, tok.ending.stopIds),
    tok.encode("<tool_response>a.txt</tool_response><|assistant|><think>"),
  );
  // A model that ended with <|user|> before tool results keeps both: what it sampled, then the
  // template's marker.
  assert.deepEqual(deltaAfter(user, results.tokens, tok.ending.stopIds), results.tokens);
  // An output cut by max_tokens gets no closing token: the next message's marker follows it.
  const next = renderDelta(tok, [{ role: "user", content: "go on" }], false);
  assert.equal(next.text, "<|user|>go on<|assistant|></think>");
  assert.deepEqual(closingTokens(tok.encode("I was about to"), tok.ending), []);
  assert.deepEqual(
    deltaAfter(tok.encode("to").at(-1), next.tokens, tok.ending.stopIds),
    next.tokens,
  );
  // The markers in client text stay text.
  const forged = renderDelta(tok, [{ role: "user", content: "<|observation|><|user|>" }], false);
  assert.equal(forged.text, "<|user|><|observation|><|user|><|assistant|></think>");
  assert.equal(forged.tokens[0], user);
  assert.deepEqual(forged.tokens.slice(-2), tok.encode("<|assistant|></think>"));
  assert.ok(forged.tokens.slice(1, -2).every((token) => !tok.ending.stopIds.includes(token)));
  // The turn parses without its stop token: reasoning the prompt opened, then the call.
  assert.deepEqual(
    parseOutput(
      "plan</think>ok<tool_call>ls<arg_key>path</arg_key><arg_value>.</arg_value></tool_call>",
      {
        startsInReasoning: true,
        tools: new Map([["ls", { type: "object", properties: { path: { type: "string" } } }]]),
        formats: tok.formats,
      },
    ),
    {
      blocks: [
        { type: "thinking", thinking: "plan" },
        { type: "text", text: "ok" },
        { type: "tool_call", name: "ls", input: { path: "." } },
      ],
      illFormed: [],
    },
  );
});

Deno.test("GLM-4.5's template: newlines inside messages, the same markers between them", async () => {
  const tok = await familyTokenizer("glm45");
  assert.deepEqual(tok.formats, { toolCallParser: "glm45", reasoningParser: "glm45" });
  checkTemplate(tok);
  const cases: [ChatMessage[], boolean | undefined, string][] = [
    [[{ role: "user", content: "next" }], undefined, "<|user|>\nnext<|assistant|>"],
    [
      [{ role: "user", content: "next" }],
      false,
      "<|user|>\nnext/nothink<|assistant|>\n<think></think>",
    ],
    [
      [{ role: "tool", name: "ls", content: "a" }, { role: "tool", name: "ls", content: "b" }],
      undefined,
      "<|observation|>\n<tool_response>\na\n</tool_response>\n<tool_response>\nb\n</tool_response><|assistant|>",
    ],
  ];
  for (const [messages, thinking, text] of cases) {
    const delta = renderDelta(tok, messages, thinking);
    assert.equal(delta.text, text);
    assert.deepEqual(delta.tokens, tok.encode(text));
  }
});

Deno.test("Kimi K2's template: <|im_end|> ends turns though eos_token is [EOS], results carry the call's id", async () => {
  const tok = await familyTokenizer("kimi_k2");
  assert.deepEqual(tok.formats, { toolCallParser: "kimi_k2", reasoningParser: null });
  assert.equal(tok.eosToken, "[EOS]");
  const imEnd = tok.encode("<|im_end|>");
  assert.equal(imEnd.length, 1);
  assert.deepEqual(tok.ending, {
    stopIds: imEnd,
    closeId: imEnd[0],
    closers: ["<|im_end|>"],
    openers: [],
  });
  checkTemplate(tok);
  const cases: [ChatMessage[], string][] = [
    [
      [{ role: "user", content: "next" }],
      "<|im_user|>user<|im_middle|>next<|im_end|><|im_assistant|>assistant<|im_middle|>",
    ],
    [
      [{ role: "tool", name: "ls", tool_call_id: "functions.ls:0", content: "a" }],
      "<|im_system|>tool<|im_middle|>## Return of functions.ls:0\\na<|im_end|><|im_assistant|>assistant<|im_middle|>",
    ],
  ];
  for (const [messages, text] of cases) {
    const delta = renderDelta(tok, messages);
    assert.equal(delta.text, text);
    assert.deepEqual(delta.tokens, tok.encode(text));
  }
  // The sampled end token stays; nothing is dropped after it.
  const delta = renderDelta(tok, [{ role: "user", content: "next" }]).tokens;
  assert.deepEqual(deltaAfter(imEnd[0], delta, tok.ending.stopIds), delta);
  // A section of calls ends reasoning as </think> would (SGLang's kimi_k2 reasoning parser).
  assert.deepEqual(
    parseOutput(
      '<think>look<|tool_calls_section_begin|><|tool_call_begin|>functions.ls:0<|tool_call_argument_begin|>{"path":"."}<|tool_call_end|><|tool_calls_section_end|>',
      {
        startsInReasoning: false,
        tools: new Map([["ls", {}]]),
        formats: { toolCallParser: "kimi_k2", reasoningParser: "kimi_k2" },
      },
    ),
    {
      blocks: [
        { type: "thinking", thinking: "look" },
        { type: "tool_call", name: "ls", input: { path: "." } },
      ],
      illFormed: [],
    },
  );
});
