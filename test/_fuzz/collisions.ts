/**
 * Bodies built to fool the memo of recurring fields (`RecurringFields`): a teaching body that
 * makes the memo hold a system prompt and a tool list where they sit, then a body that puts held
 * text exactly where the memo will look for it — under the other field's key, under a key of the
 * same name that a later one overrides, nested one level down, after a key written with escapes,
 * inside a string, in a body cut short — aligned with whitespace to the held offsets from the
 * start and from the end. A memo that trusts what it should not gives a different answer from a
 * gateway that parses each body whole; the differential tests compare the two.
 *
 * @module
 */
import type { Prng } from "./prng.ts";

/** A held value the memo may learn: its JSON text, and which fields it is valid as. */
export interface HeldText {
  readonly name: string;
  readonly text: string;
  readonly validAs: readonly ("system" | "tools")[];
}

/** One case: a body that teaches the memo, then a body built to collide with what it learned. */
export interface CollisionCase {
  readonly family: string;
  readonly teach: string;
  readonly body: string;
  /** Held text was put where the memo looks for it (an offset it will try). */
  readonly aligned: boolean;
}

const LOREM = "Read the repository, run the tests, fix what fails and say what you changed. ";

/** System prompts (valid only as `system`), tool lists (only as `tools`), and both at once. */
export function heldTexts(prng: Prng): HeldText[] {
  const texts: HeldText[] = [];
  for (let i = 0; i < 4; i++) {
    const blocks = Array.from({ length: 1 + prng.int(3) }, (_, b) => ({
      type: "text",
      text: `System ${i}.${b}: ${LOREM.repeat(6 + prng.int(10))}`,
    }));
    texts.push({ name: `system${i}`, text: JSON.stringify(blocks), validAs: ["system"] });
  }
  for (let i = 0; i < 4; i++) {
    const tools = Array.from({ length: 3 + prng.int(6) }, (_, t) => ({
      name: `tool_${i}_${t}`,
      description: `Tool ${t} of set ${i}: ${LOREM.repeat(1 + prng.int(3))}`,
      input_schema: { type: "object", properties: { path: { type: "string" } } },
    }));
    texts.push({ name: `tools${i}`, text: JSON.stringify(tools), validAs: ["tools"] });
  }
  for (let i = 0; i < 2; i++) {
    // Text blocks that are tools too: loose objects take both shapes.
    const dual = Array.from({ length: 4 + prng.int(4) }, (_, t) => ({
      type: "text",
      text: `Dual ${i}.${t}: ${LOREM.repeat(2 + prng.int(3))}`,
      name: `dual_${i}_${t}`,
      input_schema: { type: "object" },
    }));
    texts.push({ name: `dual${i}`, text: JSON.stringify(dual), validAs: ["system", "tools"] });
  }
  return texts;
}

/** A top-level member as written: its key's text, what stands between, its value's text. */
interface Member {
  readonly key: string;
  readonly sep: string;
  readonly value: string;
  /** Held text inside the value, at this offset of the value's text. */
  readonly span?: { readonly held: HeldText; readonly at: number };
}

const member = (key: string, value: string, sep = ":"): Member => ({
  key: JSON.stringify(key),
  sep,
  value,
});
const spanned = (key: string, held: HeldText, sep = ":"): Member => around(key, "", held, "", sep);
/** A member whose value holds `held`'s text between `before` and `after`; `key` as written. */
const around = (
  key: string,
  before: string,
  held: HeldText,
  after: string,
  sep = ":",
  written = JSON.stringify(key),
): Member => ({
  key: written,
  sep,
  value: before + held.text + after,
  span: { held, at: before.length },
});

/** The other fields of a turn: a model, `max_tokens` and one user message. */
function ordinary(prng: Prng, maxTokens: number): Member[] {
  const messages = [{
    role: "user",
    content: `Task ${prng.int(1e6)}: ${LOREM.slice(prng.int(40))}`,
  }];
  return [
    member("model", JSON.stringify("qwen3")),
    member("max_tokens", String(maxTokens)),
    member("messages", JSON.stringify(messages)),
  ];
}

function shuffle<T>(prng: Prng, items: T[]): T[] {
  for (let i = items.length - 1; i > 0; i--) {
    const j = prng.int(i + 1);
    [items[i], items[j]] = [items[j], items[i]];
  }
  return items;
}

/** Where each held text sits in a compact body: its offsets from the start and from the end. */
interface Layout {
  readonly fromStart: Map<string, number>;
  readonly fromEnd: Map<string, number>;
}

/** The teaching body: compact JSON, as a client sends it, with `system` and `tools` held. */
function teachingBody(
  prng: Prng,
  system: HeldText,
  tools: HeldText,
): { text: string; layout: Layout } {
  const members = shuffle(prng, [
    ...ordinary(prng, 0),
    spanned("system", system),
    spanned("tools", tools),
  ]);
  const { text, spans } = write(members, "", "");
  const fromStart = new Map<string, number>();
  const fromEnd = new Map<string, number>();
  for (const { held, at } of spans) {
    fromStart.set(held.name, at);
    fromEnd.set(held.name, text.length - at);
  }
  return { text, layout: { fromStart, fromEnd } };
}

/** The body's text, and where each span's held text starts in it. */
function write(
  members: readonly Member[],
  lead: string,
  trail: string,
): { text: string; spans: { held: HeldText; at: number }[] } {
  let text = "{" + lead;
  const spans: { held: HeldText; at: number }[] = [];
  members.forEach((m, i) => {
    if (i > 0) text += ",";
    text += m.key + m.sep;
    if (m.span) spans.push({ held: m.span.held, at: text.length + m.span.at });
    text += m.value;
  });
  return { text: text + trail + "}", spans };
}

/**
 * The body of `members` with whitespace after `{` and before `}` so that its first span starts
 * where its held text started in the teaching body, and its last span is as far from the end as
 * its held text was; whether either could be aligned.
 */
function aligned(members: readonly Member[], layout: Layout): { text: string; aligned: boolean } {
  const bare = write(members, "", "");
  if (bare.spans.length === 0) return { text: bare.text, aligned: false };
  const first = bare.spans[0];
  const last = bare.spans[bare.spans.length - 1];
  const wantStart = layout.fromStart.get(first.held.name);
  const wantEnd = layout.fromEnd.get(last.held.name);
  const lead = wantStart === undefined ? -1 : wantStart - first.at;
  const trail = wantEnd === undefined ? -1 : wantEnd - (bare.text.length - last.at);
  const text = write(members, " ".repeat(Math.max(0, lead)), " ".repeat(Math.max(0, trail))).text;
  return { text, aligned: lead >= 0 || trail >= 0 };
}

/** Each family of colliding body, by name: its members, given the held texts of the teaching body. */
const FAMILIES: Record<
  string,
  (prng: Prng, s: HeldText, t: HeldText, all: readonly HeldText[]) => { members: Member[] }
> = {
  // The attack of issue 47: each field's text under the other's key.
  swapped: (prng, s, t) => ({
    members: [spanned("tools", s, ": "), spanned("system", t), ...ordinary(prng, 4)],
  }),
  swappedAtEnd: (prng, s, t) => ({
    members: [...ordinary(prng, 4), spanned("tools", s), spanned("system", t, " :")],
  }),
  swappedAround: (prng, s, t) => ({
    members: [spanned("tools", s), ...ordinary(prng, 4), spanned("system", t)],
  }),
  // The held text under its own key, and a later field of the same name that JSON.parse keeps.
  overridden: (prng, s, t) => ({
    members: [
      spanned("system", s),
      ...ordinary(prng, 4),
      spanned("tools", t),
      member("system", JSON.stringify(`Override ${prng.int(1000)}`)),
    ],
  }),
  overriddenByHeld: (prng, s, t, all) => ({
    members: [
      spanned("system", s),
      spanned("tools", t),
      ...ordinary(prng, 4),
      member("tools", prng.pick(all).text),
    ],
  }),
  // The held text nested one level down, the real field elsewhere or absent.
  nested: (prng, s, t) => ({
    members: [
      around("extra", '{"system":', s, "}"),
      ...ordinary(prng, 4),
      around("more", "[", t, "]"),
      ...(prng.chance(0.5) ? [member("system", JSON.stringify("Plain system."))] : []),
    ],
  }),
  asMessageContent: (_prng, s, t) => ({
    members: [
      member("model", '"qwen3"'),
      around("messages", '[{"role":"user","content":', s, "}]"),
      member("max_tokens", "4"),
      spanned("tools", t),
    ],
  }),
  // The key written otherwise: escapes, another case, another key of the same length.
  escapedKey: (prng, s, t) => ({
    members: [
      around("system", "", s, "", ":", '"sys\\u0074em"'),
      ...ordinary(prng, 4),
      around("tools", "", t, "", ":", prng.pick(['"Tools"', '"tool\\u0073"', '"tooks"'])),
    ],
  }),
  // Held text after a key inside a string: the quotes end the string (seldom valid JSON).
  inString: (prng, s, t) => ({
    members: [around("note", '"\\"system\\":', s, '"'), ...ordinary(prng, 4), spanned("tools", t)],
  }),
  // The held text itself, written with an escape (the same value, other text).
  escapedValue: (prng, s, t) => ({
    members: [
      { ...spanned("system", s), value: s.text.replace("a", "\\u0061") },
      ...ordinary(prng, 4),
      spanned("tools", t),
    ],
  }),
  // What the memo is for: both fields as they were, the rest changed.
  sameFields: (prng, s, t) => ({
    members: shuffle(prng, [spanned("system", s), spanned("tools", t), ...ordinary(prng, 4)]),
  }),
  // One field only; the other's text where it was, under a key the schema does not know.
  oneField: (prng, s, t) => ({
    members: [spanned("system", s), ...ordinary(prng, 4), spanned("x_tools", t)],
  }),
};

/** Ways to spoil a body after it is built (a body a client cut short, or wrote badly). */
const SPOILERS: ((text: string, prng: Prng) => string)[] = [
  (text) => text,
  (text) => text,
  (text) => text,
  (text, prng) => text.slice(0, text.length - 1 - prng.int(20)),
  (text) => text.replace(/\}$/, ",}"),
  (text) => text + "x",
  (text) => text.replace('"messages":', '"messages" :: '),
];

/**
 * Case `index` of the seeded run: a teaching body for one system prompt and one tool list of
 * `texts`, then a body of one family built on them.
 */
export function collisionCase(prng: Prng, texts: readonly HeldText[]): CollisionCase {
  const systems = texts.filter((held) => held.validAs.includes("system"));
  const toolLists = texts.filter((held) => held.validAs.includes("tools"));
  const s = prng.pick(systems);
  const t = prng.pick(toolLists.filter((held) => held !== s));
  const teach = teachingBody(prng, s, t);
  const family = prng.pick(Object.keys(FAMILIES));
  const body = aligned(FAMILIES[family](prng, s, t, texts).members, teach.layout);
  const spoil = prng.pick(SPOILERS);
  return { family, teach: teach.text, body: spoil(body.text, prng), aligned: body.aligned };
}
