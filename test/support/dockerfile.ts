// Reads the Dockerfile and .dockerignore as Docker does, for a machine without a Docker engine:
// the instructions of each stage, and the build context (the files a build is sent, after
// .dockerignore). test/packaging.test.ts replays the stages' COPY and npm steps in folders
// with them.
import { lstatSync, readdirSync, readFileSync } from "node:fs";
import { join } from "node:path";

export interface Instruction {
  keyword: string;
  /** the text after the keyword, continuation lines joined */
  args: string;
  line: number;
}

export interface Stage {
  /** the base image, with the ARG defaults declared before the first FROM substituted */
  from: string;
  name: string | undefined;
  instructions: Instruction[];
}

/** The instructions in order, with `\` continuations joined and comment lines dropped. */
export function parseInstructions(text: string): Instruction[] {
  const out: Instruction[] = [];
  const lines = text.split("\n");
  for (let i = 0; i < lines.length; i++) {
    const start = i;
    let line = lines[i]!.trim();
    if (line === "" || line.startsWith("#")) continue;
    while (line.endsWith("\\")) {
      line = line.slice(0, -1);
      // comment lines inside a continued instruction are dropped, as Docker does
      do i++;
      while (i < lines.length && lines[i]!.trim().startsWith("#"));
      line += ` ${(lines[i] ?? "").trim()}`;
    }
    const m = /^(\S+)\s*(.*)$/.exec(line)!;
    out.push({ keyword: m[1]!.toUpperCase(), args: m[2]!.trim(), line: start + 1 });
  }
  return out;
}

/** Splits the Dockerfile into its stages. */
export function parseStages(text: string): Stage[] {
  const args = new Map<string, string>();
  const stages: Stage[] = [];
  for (const instruction of parseInstructions(text)) {
    if (instruction.keyword === "FROM") {
      const [image, as, name] = instruction.args.split(/\s+/);
      const from = image!.replace(/\$\{(\w+)\}|\$(\w+)/g, (_, a, b) => args.get(a ?? b) ?? "");
      stages.push({ from, name: as?.toUpperCase() === "AS" ? name : undefined, instructions: [] });
    } else if (stages.length === 0) {
      if (instruction.keyword !== "ARG")
        throw new Error(`line ${instruction.line}: only ARG may precede FROM`);
      const [name, value = ""] = instruction.args.split("=");
      args.set(name!, value);
    } else stages.at(-1)!.instructions.push(instruction);
  }
  return stages;
}

/** A JSON array argument (exec form), or undefined for the shell form. */
export function execForm(args: string): string[] | undefined {
  if (!args.startsWith("[")) return undefined;
  return JSON.parse(args) as string[];
}

/** ENV's `key=value` pairs (unquoted values, as this Dockerfile writes them). */
export function envPairs(args: string): Record<string, string> {
  return Object.fromEntries(
    args
      .split(/\s+/)
      .filter(Boolean)
      .map((pair) => {
        const eq = pair.indexOf("=");
        return [pair.slice(0, eq), pair.slice(eq + 1)];
      }),
  );
}

/** COPY's options, sources and destination (shell form). */
export function copyArgs(args: string): { from?: string; sources: string[]; dest: string } {
  const words = args.split(/\s+/);
  const options = words.filter((w) => w.startsWith("--"));
  const paths = words.filter((w) => !w.startsWith("--"));
  const from = options.find((o) => o.startsWith("--from="))?.slice("--from=".length);
  return { ...(from ? { from } : {}), sources: paths.slice(0, -1), dest: paths.at(-1)! };
}

interface Pattern {
  negated: boolean;
  regex: RegExp;
  text: string;
}

/** .dockerignore's patterns: Go's filepath.Match per segment, `**` any number of segments. */
export function parseDockerignore(text: string): Pattern[] {
  return text
    .split("\n")
    .map((l) => l.trim())
    .filter((l) => l !== "" && !l.startsWith("#"))
    .map((line) => {
      const negated = line.startsWith("!");
      const clean = (negated ? line.slice(1) : line).replace(/^\/+|\/+$/g, "");
      let source = "";
      for (let i = 0; i < clean.length; i++) {
        const c = clean[i]!;
        if (c === "*" && clean[i + 1] === "*") {
          // `**/` matches no segment or any number of them; a trailing `**` anything
          source += clean[i + 2] === "/" ? "(?:.*/)?" : ".*";
          i += clean[i + 2] === "/" ? 2 : 1;
        } else if (c === "*") source += "[^/]*";
        else if (c === "?") source += "[^/]";
        else source += c.replace(/[.+^${}()|[\]\\]/g, "\\$&");
      }
      return { negated, regex: new RegExp(`^${source}$`), text: clean };
    });
}

/** Whether Docker leaves `path` out of the context: the last pattern matching it or a parent wins. */
export function isIgnored(patterns: Pattern[], path: string): boolean {
  const parents = path.split("/").map((_, i, parts) => parts.slice(0, i + 1).join("/"));
  let ignored = false;
  for (const p of patterns) if (parents.some((candidate) => p.regex.test(candidate))) ignored = !p.negated;
  return ignored;
}

/** The build context's files, relative to `dir`, sorted: what `docker build dir` sends. */
export function buildContext(dir: string): string[] {
  const patterns = parseDockerignore(readFileSync(join(dir, ".dockerignore"), "utf8"));
  const out: string[] = [];
  const walk = (relative: string) => {
    for (const entry of readdirSync(join(dir, relative)).sort()) {
      const path = relative ? `${relative}/${entry}` : entry;
      const info = lstatSync(join(dir, path));
      if (info.isDirectory()) {
        // an ignored folder is entered only where a `!` pattern may take something back
        const reopened = patterns.some((p) => p.negated && p.text.startsWith(`${path}/`));
        if (!isIgnored(patterns, path) || reopened) walk(path);
      } else if (!isIgnored(patterns, path)) out.push(path);
    }
  };
  walk("");
  return out;
}
