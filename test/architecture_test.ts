/**
 * The layering of `lib/`, held by its own source: the import statements of every module are read
 * and set against one table of which `lib/` folder may import which. An import the table does not
 * allow fails, as does a table with a cycle in it, a folder the table does not place, an import of
 * `functions/` (HTTP never leaks into the domain), and any loop of modules importing each other.
 * Doc examples are left out: like tests, they may import from anywhere.
 */
import assert from "node:assert/strict";

const LIB = new URL("../lib/", import.meta.url);

/**
 * Which `lib/` folders each folder may import, lowest first. A folder imports only folders listed
 * before it, so the table is its own proof that the layers have no cycle (checked below too).
 */
const LAYERS: ReadonlyMap<string, readonly string[]> = new Map([
  ["cache", []],
  ["errors", []],
  ["shell", []],
  ["timing", []],
  ["chat", ["cache"]],
  ["vision", ["errors"]],
  ["limits", ["errors"]],
  ["agents", ["errors", "limits", "shell"]],
  ["config", ["agents", "cache", "errors"]],
  ["metrics", ["errors"]],
  ["engine", ["errors", "metrics"]],
  ["kv", ["cache", "errors", "metrics", "timing"]],
  ["sandbox", ["config", "errors", "metrics", "timing"]],
  ["output", ["limits"]],
  ["tokenizer", ["cache", "chat", "errors", "limits", "output"]],
  ["template", ["cache", "chat", "engine", "errors", "limits", "output", "tokenizer"]],
  ["evaluate", ["errors", "kv", "limits", "metrics", "sandbox", "shell"]],
  ["scripted_engine", ["engine", "tokenizer", "vision"]],
  ["model", ["cache", "config", "engine", "errors", "output", "template", "tokenizer", "vision"]],
  ["chain", ["chat", "engine", "kv"]],
  [
    "session",
    [
      "agents",
      "cache",
      "chain",
      "chat",
      "config",
      "engine",
      "errors",
      "kv",
      "limits",
      "metrics",
      "output",
      "template",
      "timing",
      "tokenizer",
    ],
  ],
  ["anthropic", [
    "agents",
    "cache",
    "chat",
    "errors",
    "limits",
    "output",
    "session",
    "timing",
    "vision",
  ]],
  ["segment", [
    "chain",
    "chat",
    "config",
    "engine",
    "errors",
    "kv",
    "limits",
    "output",
    "session",
    "tokenizer",
  ]],
  ["openai", [
    "agents",
    "anthropic",
    "chat",
    "engine",
    "errors",
    "limits",
    "output",
    "session",
    "vision",
  ]],
  ["responses", [
    "agents",
    "anthropic",
    "chat",
    "engine",
    "errors",
    "limits",
    "openai",
    "output",
    "session",
  ]],
  [
    "rollout",
    [
      "agents",
      "config",
      "errors",
      "evaluate",
      "kv",
      "limits",
      "metrics",
      "sandbox",
      "session",
      "shell",
      "timing",
    ],
  ],
]);

/** One import of a module: the file (relative to `lib/`), its line, and what it names. */
interface Import {
  readonly from: string;
  readonly line: number;
  readonly to: string;
}

/**
 * The relative imports of a module's source, outside its comments (doc examples included): static
 * `import`/`export … from`, side-effect imports and `import("…")`, with their lines.
 */
export function importsOf(source: string): { line: number; specifier: string }[] {
  // Comment lines are blanked, not dropped, so the lines still count.
  const code = source.split("\n").map((line) => {
    const text = line.trimStart();
    return text.startsWith("*") || text.startsWith("//") || text.startsWith("/*") ? "" : line;
  }).join("\n");
  const found: { line: number; specifier: string }[] = [];
  const patterns = [
    // `import … from`, `export … from`: a statement ends at its `;` (deno fmt writes them all).
    /^[ \t]*(?:import|export)\b[^;]*?\bfrom\s*["']([^"']+)["']/gm,
    /^[ \t]*import\s*["']([^"']+)["']/gm,
    /\bimport\s*\(\s*["']([^"']+)["']\s*\)/g,
  ];
  for (const pattern of patterns) {
    for (const match of code.matchAll(pattern)) {
      const at = match.index + match[0].length - match[0].trimStart().length;
      found.push({ line: code.slice(0, at).split("\n").length, specifier: match[1] });
    }
  }
  return found.sort((a, b) => a.line - b.line);
}

/** Every module under `lib/`, by its path relative to `lib/`, with its source. */
async function libSources(): Promise<Map<string, string>> {
  const sources = new Map<string, string>();
  const walk = async (dir: URL, prefix: string) => {
    for await (const entry of Deno.readDir(dir)) {
      const path = `${prefix}${entry.name}`;
      if (entry.isDirectory) await walk(new URL(`${entry.name}/`, dir), `${path}/`);
      else if (entry.name.endsWith(".ts")) {
        sources.set(path, await Deno.readTextFile(new URL(entry.name, dir)));
      }
    }
  };
  await walk(LIB, "");
  return sources;
}

/** `specifier` from `file` resolved to a path relative to `lib/` (`../x` above it when outside). */
function resolve(file: string, specifier: string): string {
  const parts = file.split("/").slice(0, -1);
  for (const part of specifier.split("/")) {
    if (part === "." || part === "") continue;
    if (part === "..") {
      if (parts.length > 0 && parts.at(-1) !== "..") parts.pop();
      else parts.push("..");
    } else parts.push(part);
  }
  return parts.join("/");
}

/** The imports between `lib/` modules (and out of `lib/`) in `sources`. */
export function importGraph(sources: ReadonlyMap<string, string>): Import[] {
  const imports: Import[] = [];
  for (const [file, source] of sources) {
    for (const { line, specifier } of importsOf(source)) {
      if (!specifier.startsWith(".")) continue; // npm: and node: packages
      imports.push({ from: file, line, to: resolve(file, specifier) });
    }
  }
  return imports;
}

/** What breaks the layering in `imports`, one line each; empty when nothing does. */
export function layeringProblems(
  imports: readonly Import[],
  folders: readonly string[],
  layers: ReadonlyMap<string, readonly string[]>,
): string[] {
  const problems: string[] = [];
  const placed = [...layers.keys()];
  for (const folder of folders) {
    if (!layers.has(folder)) problems.push(`lib/${folder}/ is not in the table of layers`);
  }
  // The table lists each folder after every folder it may import.
  for (const [folder, allowed] of layers) {
    for (const below of allowed) {
      if (placed.indexOf(below) < 0 || placed.indexOf(below) >= placed.indexOf(folder)) {
        problems.push(`the table lets lib/${folder}/ import lib/${below}/, which is not below it`);
      }
    }
  }
  for (const { from, line, to } of imports) {
    const [source] = from.split("/");
    const [target] = to.split("/");
    if (target === "..") {
      problems.push(`lib/${from}:${line} imports ${to.replace(/^(\.\.\/)+/, "")} outside lib/`);
    } else if (target !== source && !layers.get(source)?.includes(target)) {
      problems.push(
        `lib/${from}:${line} imports lib/${to}: lib/${source}/ may not import lib/${target}/`,
      );
    }
  }
  for (const loop of importLoops(imports)) {
    problems.push(`these modules import each other in a loop: ${loop.join(", ")}`);
  }
  return problems;
}

/** Groups of modules that import each other in a loop (strongly connected, more than one). */
export function importLoops(imports: readonly Import[]): string[][] {
  const edges = new Map<string, string[]>();
  for (const { from, to } of imports) {
    if (!edges.has(from)) edges.set(from, []);
    edges.get(from)!.push(to);
  }
  // Tarjan's algorithm, iterative so a deep chain of imports cannot overflow the stack.
  const index = new Map<string, number>();
  const low = new Map<string, number>();
  const stack: string[] = [];
  const onStack = new Set<string>();
  const loops: string[][] = [];
  let next = 0;
  for (const root of edges.keys()) {
    if (index.has(root)) continue;
    const work: { node: string; child: number }[] = [{ node: root, child: 0 }];
    index.set(root, next);
    low.set(root, next++);
    stack.push(root);
    onStack.add(root);
    while (work.length > 0) {
      const top = work.at(-1)!;
      const children = edges.get(top.node) ?? [];
      if (top.child < children.length) {
        const child = children[top.child++];
        if (!index.has(child)) {
          index.set(child, next);
          low.set(child, next++);
          stack.push(child);
          onStack.add(child);
          work.push({ node: child, child: 0 });
        } else if (onStack.has(child)) {
          low.set(top.node, Math.min(low.get(top.node)!, index.get(child)!));
        }
        continue;
      }
      work.pop();
      if (work.length > 0) {
        const parent = work.at(-1)!.node;
        low.set(parent, Math.min(low.get(parent)!, low.get(top.node)!));
      }
      if (low.get(top.node) === index.get(top.node)) {
        const group: string[] = [];
        let member: string;
        do {
          member = stack.pop()!;
          onStack.delete(member);
          group.push(member);
        } while (member !== top.node);
        if (group.length > 1) loops.push(group.sort());
      }
    }
  }
  return loops;
}

const sources = await libSources();
const folders = [...new Set([...sources.keys()].map((path) => path.split("/")[0]))]
  .filter((name) => !name.endsWith(".ts"));

Deno.test("lib/ imports only what its table of layers allows, and no modules import each other in a loop", () => {
  const imports = importGraph(sources);
  // The reader finds the imports it must: a sample of known ones.
  const has = (from: string, to: string) => imports.some((i) => i.from === from && i.to === to);
  assert.ok(has("session/turn_prompt.ts", "template/mod.ts"));
  assert.ok(has("template/_encoder_worker.ts", "template/mod.ts")); // `await import(…)`
  assert.ok(has("kv/mod.ts", "kv/keys.ts")); // `export * from`
  assert.deepEqual(layeringProblems(imports, folders, LAYERS), []);
});

Deno.test("the check fails on a planted back-edge, a loop of modules and an unplaced folder", () => {
  const planted = new Map(sources);
  // A store moved back into lib/kv, importing the session records above it.
  planted.set(
    "kv/session_store.ts",
    'import type { SessionRecord } from "../session/records.ts";\nexport const x = 1;\n',
  );
  planted.set("template/a.ts", 'import { b } from "./b.ts";\nexport const a = b;\n');
  planted.set("template/b.ts", 'export { a as b } from "./a.ts";\n');
  planted.set("widgets/w.ts", 'import { keys } from "../kv/mod.ts";\n');
  planted.set("chat/h.ts", 'import { app } from "../../functions/serve.ts";\n');
  const problems = layeringProblems(importGraph(planted), [...folders, "widgets"], LAYERS);
  assert.deepEqual(problems, [
    "lib/widgets/ is not in the table of layers",
    "lib/kv/session_store.ts:1 imports lib/session/records.ts: lib/kv/ may not import lib/session/",
    "lib/widgets/w.ts:1 imports lib/kv/mod.ts: lib/widgets/ may not import lib/kv/",
    "lib/chat/h.ts:1 imports functions/serve.ts outside lib/",
    "these modules import each other in a loop: template/a.ts, template/b.ts",
  ]);
});

Deno.test("a table that lets a folder import one above it is refused", () => {
  const layers = new Map(LAYERS);
  layers.set("kv", [...LAYERS.get("kv")!, "session"]);
  assert.deepEqual(layeringProblems([], [], layers), [
    "the table lets lib/kv/ import lib/session/, which is not below it",
  ]);
});

Deno.test("importsOf() reads multi-line, type-only, re-exporting and dynamic imports, not doc examples", () => {
  const source = [
    "/**",
    " * ```ts",
    ' * import { x } from "../session/mod.ts";',
    " * ```",
    " */",
    "import {",
    "  type A,",
    "  b,",
    '} from "./a.ts";',
    'import type { C } from "../chat/mod.ts";',
    'export * from "./d.ts";',
    'export { e } from "./e.ts";',
    'import "./side_effect.ts";',
    "export const f = 1;",
    'const g = await import("./g.ts");',
    '// import { h } from "./h.ts";',
  ].join("\n");
  assert.deepEqual(importsOf(source), [
    { line: 6, specifier: "./a.ts" },
    { line: 10, specifier: "../chat/mod.ts" },
    { line: 11, specifier: "./d.ts" },
    { line: 12, specifier: "./e.ts" },
    { line: 13, specifier: "./side_effect.ts" },
    { line: 15, specifier: "./g.ts" },
  ]);
});
