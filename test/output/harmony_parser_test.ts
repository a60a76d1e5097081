/**
 * gpt-oss's harmony output read into thinking, text and tool calls: SGLang's literal strings
 * (`test_harmony_parser.py`, `gpt_oss_detector.py`), then good, malformed and cut-short outputs
 * as the gateway decodes them (the stop token that ended the turn removed).
 */
import assert from "node:assert/strict";
import { parseHarmony, parseOutput } from "../../lib/output/mod.ts";

const TOOLS = new Set(["get_weather", "get_temp", "Bash", "mcp.search"]);

const parse = (text: string) => parseHarmony(text, TOOLS);

Deno.test("parseHarmony() reads SGLang's single blocks: analysis, commentary, final, a call", () => {
  assert.deepEqual(parse("<|channel|>analysis<|message|>Let me think about this<|end|>"), {
    blocks: [{ type: "thinking", thinking: "Let me think about this" }],
    illFormed: [],
  });
  assert.deepEqual(parse("<|channel|>commentary<|message|>User-visible message<|end|>"), {
    blocks: [{ type: "text", text: "User-visible message" }],
    illFormed: [],
  });
  assert.deepEqual(
    parse("<|start|>assistant<|channel|>final<|message|>The answer is 42<|return|>"),
    { blocks: [{ type: "text", text: "The answer is 42" }], illFormed: [] },
  );
  assert.deepEqual(
    parse(
      '<|channel|>commentary to=functions.get_weather<|message|>{"location": "SF"}<|call|>',
    ),
    {
      blocks: [{ type: "tool_call", name: "get_weather", input: { location: "SF" } }],
      illFormed: [],
    },
  );
  assert.deepEqual(parse("<|channel|>analysis<|message|><|end|>"), { blocks: [], illFormed: [] });
});

Deno.test("parseHarmony() reads SGLang's sequences: reasoning then a call, reasoning then an answer", () => {
  assert.deepEqual(
    parse(
      "<|channel|>analysis<|message|>Need to use function get_weather.<|end|>" +
        "<|start|>assistant<|channel|>commentary to=functions.get_weather<|message|>" +
        '{"location":"San Francisco"}<|call|>',
    ).blocks,
    [
      { type: "thinking", thinking: "Need to use function get_weather." },
      { type: "tool_call", name: "get_weather", input: { location: "San Francisco" } },
    ],
  );
  // The detector's documented format: the recipient after the channel, then `<|constrain|>json`.
  assert.deepEqual(
    parse(
      '<|channel|>commentary to=functions.get_weather <|constrain|>json<|message|>{"location": "Tokyo"}',
    ).blocks,
    [{ type: "tool_call", name: "get_weather", input: { location: "Tokyo" } }],
  );
  assert.deepEqual(
    parse(
      "<|channel|>analysis<|message|>reasoning<|end|><|start|>assistant<|channel|>final<|message|>answer",
    ).blocks,
    [{ type: "thinking", thinking: "reasoning" }, { type: "text", text: "answer" }],
  );
});

Deno.test("parseHarmony() reads what gpt-oss samples: a preamble, the template's recipient order, tool names with dots", () => {
  assert.deepEqual(
    parse(
      "<|channel|>analysis<|message|>List the files.<|end|>" +
        "<|start|>assistant<|channel|>commentary<|message|>Listing first.<|end|>" +
        '<|start|>assistant to=functions.Bash<|channel|>commentary json<|message|>{"command": "ls"}',
    ),
    {
      blocks: [
        { type: "thinking", thinking: "List the files." },
        { type: "text", text: "Listing first." },
        { type: "tool_call", name: "Bash", input: { command: "ls" } },
      ],
      illFormed: [],
    },
  );
  assert.deepEqual(
    parse('<|channel|>commentary to=functions.mcp.search <|constrain|>json<|message|>{"q": "x"}')
      .blocks,
    [{ type: "tool_call", name: "mcp.search", input: { q: "x" } }],
  );
  // A later message that leaves out `<|start|>assistant` is still a message.
  assert.deepEqual(
    parse("<|channel|>analysis<|message|>a<|end|><|channel|>final<|message|>b").blocks,
    [{ type: "thinking", thinking: "a" }, { type: "text", text: "b" }],
  );
});

Deno.test("parseHarmony() keeps what cannot be used as text, with the reasons", () => {
  const cases: [string, string[], string[]][] = [
    // A built-in tool the request did not offer (SGLang's analysis-channel browser call).
    [
      '<|channel|>analysis to=browser.search<|message|>{"query": "SGLang"}',
      ['<|channel|>analysis to=browser.search<|message|>{"query": "SGLang"}'],
      ['tool call names an unknown tool "browser.search"'],
    ],
    [
      "<|channel|>commentary to=functions.Bash <|constrain|>json<|message|>ls -la",
      ["<|channel|>commentary to=functions.Bash <|constrain|>json<|message|>ls -la"],
      ['arguments of "Bash" are not a JSON object'],
    ],
    [
      '<|channel|>commentary to=functions.Bash<|message|>["ls"]',
      ['<|channel|>commentary to=functions.Bash<|message|>["ls"]'],
      ['arguments of "Bash" are not a JSON object'],
    ],
    [
      "<|channel|>notes<|message|>scribble<|end|><|start|>assistant<|channel|>final<|message|>ok",
      ["<|channel|>notes<|message|>scribble<|end|>", "ok"],
      ['harmony message on an unknown channel "notes"'],
    ],
    ["Plain text, no channel.", ["Plain text, no channel."], ["text outside a harmony message"]],
    [
      "<|channel|>final<|message|>Done.<|end|> trailing words",
      ["Done.", "trailing words"],
      ["text outside a harmony message"],
    ],
  ];
  for (const [text, kept, reasons] of cases) {
    const parsed = parse(text);
    assert.deepEqual(
      parsed.blocks,
      kept.map((value) => ({ type: "text", text: value })),
      text,
    );
    assert.deepEqual(parsed.illFormed, reasons, text);
  }
});

Deno.test("parseHarmony() reads an output cut short: reasoning stays reasoning, a half call stays text", () => {
  assert.deepEqual(parse("<|channel|>analysis<|message|>Still thinking about"), {
    blocks: [{ type: "thinking", thinking: "Still thinking about" }],
    illFormed: [],
  });
  assert.deepEqual(
    parse(
      '<|channel|>analysis<|message|>Run it.<|end|><|start|>assistant<|channel|>commentary to=functions.Bash <|constrain|>json<|message|>{"comm',
    ),
    {
      blocks: [
        { type: "thinking", thinking: "Run it." },
        {
          type: "text",
          text:
            '<|start|>assistant<|channel|>commentary to=functions.Bash <|constrain|>json<|message|>{"comm',
        },
      ],
      illFormed: ['arguments of "Bash" are not a JSON object'],
    },
  );
  // Cut inside a header: no `<|message|>` yet.
  assert.deepEqual(parse("<|channel|>analysis<|message|>a<|end|><|start|>assistant<|chan"), {
    blocks: [{ type: "thinking", thinking: "a" }, {
      type: "text",
      text: "<|start|>assistant<|chan",
    }],
    illFormed: ["text outside a harmony message"],
  });
});

Deno.test("parseOutput() reads harmony for the gpt-oss formats, whatever the prompt opened", () => {
  const formats = { toolCallParser: "gpt-oss", reasoningParser: "gpt-oss" };
  const tools = new Map([["Bash", undefined]]);
  const text =
    '<|channel|>analysis<|message|>ls<|end|><|start|>assistant<|channel|>commentary to=functions.Bash <|constrain|>json<|message|>{"command": "ls"}';
  for (const startsInReasoning of [false, true]) {
    assert.deepEqual(parseOutput(text, { startsInReasoning, tools, formats }), parse(text));
  }
});
