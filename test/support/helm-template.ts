// Renders a Helm chart the way `helm template` does, for a machine without helm: the part of Go's
// text/template and of Helm's functions that deploy/helm/chat-gateway uses. A template using
// more fails here with the construct named, so the chart and its test grow together.
// Semantics kept: `{{-`/`-}}` trimming, Go truthiness, pipes passing the value as the last
// argument, `with` and `range` rebinding the dot, `$` the root, partials (`_*.tpl`) defining
// only, and toYaml's sorted keys without a trailing newline.
import { createHash } from "node:crypto";
import { readdirSync, readFileSync } from "node:fs";
import { join } from "node:path";
import { Document, parse, visit } from "yaml";

type Node =
  | { kind: "text"; text: string }
  | { kind: "output"; expr: string }
  | { kind: "if"; branches: { cond: string | null; body: Node[] }[] }
  | { kind: "with"; expr: string; body: Node[]; orElse: Node[] }
  | { kind: "range"; key: string | null; value: string | null; expr: string; body: Node[] };

interface Scope {
  dot: unknown;
  root: unknown;
  vars: Map<string, unknown>;
}

/** A template that called `fail`, or `required` with nothing: what Helm prints and refuses. */
export class ChartFailure extends Error {}

function tokenize(source: string, file: string): ({ text: string } | { action: string })[] {
  const tokens: ({ text: string } | { action: string })[] = [];
  let at = 0;
  let trimNext = false;
  while (at < source.length) {
    const open = source.indexOf("{{", at);
    let text = source.slice(at, open === -1 ? undefined : open);
    if (trimNext) text = text.replace(/^\s+/, "");
    if (open === -1) {
      tokens.push({ text });
      break;
    }
    const close = source.indexOf("}}", open);
    if (close === -1) throw new Error(`${file}: unclosed action`);
    let action = source.slice(open + 2, close);
    if (action.startsWith("- ") || action.startsWith("-\n")) {
      text = text.replace(/\s+$/, "");
      action = action.slice(1);
    }
    trimNext = action.endsWith(" -") || action.endsWith("\n-");
    if (trimNext) action = action.slice(0, -1);
    tokens.push({ text });
    action = action.trim();
    if (!(action.startsWith("/*") && action.endsWith("*/"))) tokens.push({ action });
    at = close + 2;
  }
  return tokens.filter((t) => !("text" in t) || t.text !== "");
}

/** Parses tokens into nodes; `define` blocks go into `defines`. */
function parseNodes(
  tokens: ({ text: string } | { action: string })[],
  defines: Map<string, Node[]>,
  file: string,
): Node[] {
  let i = 0;
  const block = (): { body: Node[]; end: string } => {
    const body: Node[] = [];
    while (i < tokens.length) {
      const token = tokens[i++]!;
      if ("text" in token) {
        body.push({ kind: "text", text: token.text });
        continue;
      }
      const { action } = token;
      const word = action.split(/\s+/, 1)[0]!;
      const rest = action.slice(word.length).trim();
      if (word === "end" || word === "else") return { body, end: action };
      if (word === "if") {
        const branches = [{ cond: rest as string | null, body: [] as Node[] }];
        for (;;) {
          const inner = block();
          branches.at(-1)!.body = inner.body;
          if (inner.end === "end") break;
          if (inner.end === "else") branches.push({ cond: null, body: [] });
          else if (inner.end.startsWith("else if ")) branches.push({ cond: inner.end.slice(8), body: [] });
          else throw new Error(`${file}: unexpected {{${inner.end}}}`);
        }
        body.push({ kind: "if", branches });
      } else if (word === "with") {
        const inner = block();
        const orElse = inner.end === "else" ? block().body : [];
        body.push({ kind: "with", expr: rest, body: inner.body, orElse });
      } else if (word === "range") {
        const m = /^(?:(\$\w+)\s*(?:,\s*(\$\w+))?\s*:=\s*)?(.+)$/.exec(rest)!;
        const [key, value] = m[2] ? [m[1]!, m[2]] : [null, m[1] ?? null];
        const inner = block();
        if (inner.end !== "end") throw new Error(`${file}: range with else is not supported here`);
        body.push({ kind: "range", key, value, expr: m[3]!, body: inner.body });
      } else if (word === "define") {
        const name = JSON.parse(rest) as string;
        const inner = block();
        defines.set(name, inner.body);
      } else body.push({ kind: "output", expr: action });
    }
    return { body, end: "" };
  };
  const { body, end } = block();
  if (end) throw new Error(`${file}: unmatched {{${end}}}`);
  return body;
}

function truthy(value: unknown): boolean {
  if (value === undefined || value === null || value === false || value === 0 || value === "") return false;
  if (Array.isArray(value)) return value.length > 0;
  if (typeof value === "object") return Object.keys(value).length > 0;
  return true;
}

function show(value: unknown): string {
  if (value === undefined || value === null) return "";
  if (typeof value === "object") throw new Error("a map or list printed without toYaml");
  return String(value);
}

/**
 * Helm reads values through JSON, so every number is a float64, and its toYaml writes one of a
 * million or more in exponent form (1000000 as 1e+06): what the gateway is handed is that.
 */
function toYaml(value: unknown): string {
  const doc = new Document(value, { sortMapEntries: true });
  visit(doc, {
    Scalar(_, node) {
      if (typeof node.value === "number" && Math.abs(node.value) >= 1e6) node.format = "EXP";
    },
  });
  return doc.toString({ lineWidth: 0 }).replace(/\n$/, "");
}

/** Splits an expression into operands, keeping quoted strings and parenthesised groups whole. */
function words(expr: string): string[] {
  const out: string[] = [];
  let i = 0;
  while (i < expr.length) {
    if (/\s/.test(expr[i]!)) {
      i++;
      continue;
    }
    let j = i;
    if (expr[i] === '"') {
      j++;
      while (expr[j] !== '"') j += expr[j] === "\\" ? 2 : 1;
      j++;
    } else if (expr[i] === "(") {
      let depth = 0;
      do {
        if (expr[j] === "(") depth++;
        if (expr[j] === ")") depth--;
        j++;
      } while (depth > 0);
    } else if (expr[i] === "|") j++;
    else while (j < expr.length && !/[\s|()]/.test(expr[j]!)) j++;
    out.push(expr.slice(i, j));
    i = j;
  }
  return out;
}

export class ChartRenderer {
  readonly #defines = new Map<string, Node[]>();
  readonly #functions: Record<string, (...args: any[]) => unknown> = {
    include: (name: string, dot: unknown) => {
      const body = this.#defines.get(name);
      if (!body) throw new Error(`include: no template "${name}"`);
      return this.#run(body, { dot, root: dot, vars: new Map() });
    },
    toYaml: (v: unknown) => toYaml(v),
    nindent: (n: number, s: string) => `\n${this.#functions.indent!(n, s)}`,
    indent: (n: number, s: string) => " ".repeat(n) + String(s).replaceAll("\n", `\n${" ".repeat(n)}`),
    quote: (v: unknown) => JSON.stringify(show(v)),
    default: (fallback: unknown, v?: unknown) => (truthy(v) ? v : fallback),
    required: (message: string, v: unknown) => {
      if (!truthy(v)) throw new ChartFailure(message);
      return v;
    },
    fail: (message: string) => {
      throw new ChartFailure(message);
    },
    eq: (a: unknown, ...rest: unknown[]) => rest.some((b) => a === b),
    ne: (a: unknown, b: unknown) => a !== b,
    not: (v: unknown) => !truthy(v),
    and: (...args: unknown[]) => args.find((a) => !truthy(a)) ?? args.at(-1),
    or: (...args: unknown[]) => args.find((a) => truthy(a)) ?? args.at(-1),
    contains: (part: string, s: string) => String(s).includes(part),
    printf: (format: string, ...args: unknown[]) => {
      let k = 0;
      return format.replace(/%[sdv]/g, () => show(args[k++]));
    },
    trunc: (n: number, s: string) => String(s).slice(0, n),
    trimSuffix: (suffix: string, s: string) =>
      suffix && String(s).endsWith(suffix) ? String(s).slice(0, -suffix.length) : s,
    sha256sum: (s: string) => createHash("sha256").update(String(s)).digest("hex"),
  };

  constructor(partials: Record<string, string>) {
    for (const [file, source] of Object.entries(partials))
      parseNodes(tokenize(source, file), this.#defines, file);
  }

  /** Renders one template file against the context (its top-level dot). */
  render(file: string, source: string, context: unknown): string {
    const nodes = parseNodes(tokenize(source, file), this.#defines, file);
    return this.#run(nodes, { dot: context, root: context, vars: new Map() });
  }

  #run(nodes: Node[], scope: Scope): string {
    let out = "";
    for (const node of nodes) {
      if (node.kind === "text") out += node.text;
      else if (node.kind === "output") out += show(this.#pipeline(node.expr, scope));
      else if (node.kind === "if") {
        const branch = node.branches.find((b) => b.cond === null || truthy(this.#pipeline(b.cond, scope)));
        if (branch) out += this.#run(branch.body, scope);
      } else if (node.kind === "with") {
        const value = this.#pipeline(node.expr, scope);
        out += truthy(value) ? this.#run(node.body, { ...scope, dot: value }) : this.#run(node.orElse, scope);
      } else {
        const value = this.#pipeline(node.expr, scope);
        const entries: [unknown, unknown][] = Array.isArray(value)
          ? value.map((v, k) => [k, v])
          : Object.entries((value ?? {}) as object).sort(([a], [b]) => (a < b ? -1 : 1));
        for (const [k, v] of entries) {
          const vars = new Map(scope.vars);
          if (node.key) vars.set(node.key, k);
          if (node.value) vars.set(node.value, v);
          out += this.#run(node.body, { ...scope, dot: v, vars });
        }
      }
    }
    return out;
  }

  #pipeline(expr: string, scope: Scope): unknown {
    let value: unknown;
    let first = true;
    const commands: string[][] = [[]];
    for (const w of words(expr)) {
      if (w === "|") commands.push([]);
      else commands.at(-1)!.push(w);
    }
    for (const command of commands) {
      const [head, ...args] = command;
      if (head === undefined) throw new Error(`empty command in {{${expr}}}`);
      const fn = this.#functions[head];
      if (fn) {
        const values = args.map((a) => this.#operand(a, scope));
        value = fn(...(first ? values : [...values, value]));
      } else if (args.length === 0 && first) value = this.#operand(head, scope);
      else throw new Error(`unknown function "${head}" in {{${expr}}}`);
      first = false;
    }
    return value;
  }

  #operand(word: string, scope: Scope): unknown {
    if (word.startsWith('"')) return JSON.parse(word);
    if (/^-?\d+$/.test(word)) return Number(word);
    if (word === "true" || word === "false") return word === "true";
    if (word.startsWith("(")) return this.#pipeline(word.slice(1, -1), scope);
    const m = /^(\$\w*|)((?:\.\w+)*|\.)$/.exec(word);
    if (!m) throw new Error(`operand "${word}" is not supported here`);
    let value: unknown = m[1] === "" ? scope.dot : m[1] === "$" ? scope.root : scope.vars.get(m[1]!);
    if (m[1] && m[1] !== "$" && !scope.vars.has(m[1]!)) throw new Error(`undefined variable ${m[1]}`);
    for (const field of m[2]!.split(".").filter(Boolean))
      value = value && typeof value === "object" ? (value as Record<string, unknown>)[field] : undefined;
    return value;
  }
}

/** Merges `over` onto `base` as Helm merges --set and -f values onto the chart's: maps deeply. */
export function mergeValues(base: unknown, over: unknown): unknown {
  if (over === undefined) return base;
  const isMap = (v: unknown) => v !== null && typeof v === "object" && !Array.isArray(v);
  if (!isMap(base) || !isMap(over)) return over;
  const out: Record<string, unknown> = { ...(base as Record<string, unknown>) };
  for (const [k, v] of Object.entries(over as Record<string, unknown>))
    if (v === null) delete out[k];
    else out[k] = mergeValues(out[k], v);
  return out;
}

export interface RenderedChart {
  /** each rendered template by its path under the chart (NOTES.txt included), as text */
  files: Map<string, string>;
  /** every Kubernetes object of the manifests, parsed */
  objects: Record<string, any>[];
}

/** `helm template` of the chart with its values.yaml merged with `values`. */
export function renderChart(
  chartDir: string,
  values: Record<string, unknown> = {},
  release = { Name: "gw", Namespace: "default", Service: "Helm" },
): RenderedChart {
  const chart = parse(readFileSync(join(chartDir, "Chart.yaml"), "utf8"));
  const context = {
    Values: mergeValues(parse(readFileSync(join(chartDir, "values.yaml"), "utf8")), values),
    Release: release,
    Chart: { Name: chart.name, Version: chart.version, AppVersion: chart.appVersion },
  };
  const dir = join(chartDir, "templates");
  const names = readdirSync(dir).sort();
  const partials = Object.fromEntries(
    names.filter((n) => n.startsWith("_")).map((n) => [n, readFileSync(join(dir, n), "utf8")]),
  );
  const renderer = new ChartRenderer(partials);
  const files = new Map<string, string>();
  const objects: Record<string, any>[] = [];
  for (const name of names.filter((n) => !n.startsWith("_"))) {
    const text = renderer.render(name, readFileSync(join(dir, name), "utf8"), context);
    files.set(`templates/${name}`, text);
    if (name.endsWith(".txt")) continue;
    for (const doc of text.split(/^---\s*$/m)) {
      const object = parse(doc, { strict: true, uniqueKeys: true });
      if (object !== null && object !== undefined) objects.push(object);
    }
  }
  return { files, objects };
}
