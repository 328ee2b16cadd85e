// The README and docs/ link to each other by relative path and by heading: a page moved or a
// heading renamed would leave a link that leads nowhere. Every relative link of README.md and
// docs/**/*.md must name a file of the repository, and its anchor, when it has one, a heading
// (or an explicit id) of that page, as GitHub renders them.
import assert from "node:assert/strict";
import { existsSync, readdirSync, readFileSync, statSync } from "node:fs";
import { dirname, join, relative, resolve, sep } from "node:path";
import { describe, test } from "node:test";

const ROOT = resolve(import.meta.dirname, "..");

/** The page without its fenced code blocks and inline code, where brackets are not links. */
function prose(page: string): string {
  const lines: string[] = [];
  let fence: string | undefined;
  for (const line of page.split("\n")) {
    const marker = /^\s*(`{3,}|~{3,})/.exec(line)?.[1];
    if (fence === undefined && marker) fence = marker[0]!.repeat(marker.length);
    else if (fence !== undefined && marker?.startsWith(fence)) fence = undefined;
    else if (fence === undefined) lines.push(line.replace(/(`+)[\s\S]*?\1/g, ""));
  }
  return lines.join("\n");
}

/** A heading's anchor as GitHub makes it: lower case, punctuation dropped, spaces as hyphens. */
export function slug(heading: string): string {
  return heading
    .replace(/\[([^\]]*)\]\([^)]*\)/g, "$1")
    .replace(/<[^>]*>/g, "")
    .trim()
    .toLowerCase()
    .replace(/[^\p{L}\p{M}\p{N}\p{Pc} -]/gu, "")
    .replace(/ /g, "-");
}

/** The anchors a page offers: its headings' (a repeated one gets -1, -2, …) and explicit ids. */
export function anchorsOf(page: string): Set<string> {
  const anchors = new Set<string>();
  const seen = new Map<string, number>();
  let fence: string | undefined;
  for (const line of page.split("\n")) {
    const marker = /^\s*(`{3,}|~{3,})/.exec(line)?.[1];
    if (fence === undefined && marker) fence = marker[0]!.repeat(marker.length);
    else if (fence !== undefined && marker?.startsWith(fence)) fence = undefined;
    if (fence !== undefined || marker) continue;
    const heading = /^#{1,6}\s+(.*?)\s*#*\s*$/.exec(line)?.[1];
    if (heading !== undefined) {
      const base = slug(heading);
      const n = seen.get(base) ?? 0;
      seen.set(base, n + 1);
      anchors.add(n === 0 ? base : `${base}-${n}`);
    }
    for (const [, id] of line.matchAll(/<a\s[^>]*(?:id|name)="([^"]+)"/g)) anchors.add(id!);
  }
  return anchors;
}

/** The relative links of a page: `[text](target)`, images too, without web addresses. */
export function linksOf(page: string): string[] {
  const out: string[] = [];
  for (const [, target] of prose(page).matchAll(/!?\[[^\]]*\]\(\s*<?([^)\s>]*)>?(?:\s+"[^"]*")?\s*\)/g))
    if (target && !/^[a-z][a-z0-9+.-]*:|^\/\//i.test(target)) out.push(target);
  return out;
}

/** The links of `file` (whose text is `page`) that lead nowhere, each with the reason. */
export function brokenLinks(file: string, page: string, read: (path: string) => string): string[] {
  const out: string[] = [];
  for (const link of linksOf(page)) {
    const hash = link.indexOf("#");
    const path = decodeURIComponent(hash === -1 ? link : link.slice(0, hash));
    const anchor = hash === -1 ? undefined : decodeURIComponent(link.slice(hash + 1));
    const target = path === "" ? file : resolve(dirname(file), path);
    const where = `${relative(ROOT, file)}: ${link}`;
    if (target !== ROOT && !target.startsWith(ROOT + sep)) out.push(`${where} (outside the repository)`);
    else if (target !== file && !existsSync(target)) out.push(`${where} (no such file)`);
    else if (anchor !== undefined && target.endsWith(".md") && !anchorsOf(read(target)).has(anchor))
      out.push(`${where} (no such heading)`);
  }
  return out;
}

/** README.md and every page under docs/. */
function pages(): string[] {
  const docs = join(ROOT, "docs");
  const found = readdirSync(docs, { recursive: true, encoding: "utf8" })
    .map((name) => join(docs, name))
    .filter((path) => path.endsWith(".md") && statSync(path).isFile());
  return [join(ROOT, "README.md"), ...found.sort()];
}

const read = (path: string) => readFileSync(path, "utf8");

describe("links between the README and docs/", () => {
  test("every relative link names a file of the repository, and every anchor a heading of it", () => {
    const broken = pages().flatMap((file) => brokenLinks(file, read(file), read));
    assert.deepEqual(broken, []);
  });

  test("anchors are made as GitHub makes them", () => {
    assert.equal(slug("The reservation's prompt bound"), "the-reservations-prompt-bound");
    assert.equal(slug("Quota, limits and how tokens are charged"), "quota-limits-and-how-tokens-are-charged");
    assert.equal(slug("Responses API (`POST /v1/responses`)"), "responses-api-post-v1responses");
    assert.equal(
      slug("What a provider cannot carry: one policy (forward compatibility)"),
      "what-a-provider-cannot-carry-one-policy-forward-compatibility",
    );
    assert.equal(slug("`max_output_tokens` and `n`"), "max_output_tokens-and-n");
    assert.deepEqual(
      [...anchorsOf('# Page\n## Errors\n```md\n## Not a heading\n```\n### Errors\n<a id="here"></a>')],
      ["page", "errors", "errors-1", "here"],
    );
  });

  test("the check finds a missing file, a missing heading and a link out of the repository, and lets good links pass", () => {
    const file = join(ROOT, "docs", "x.md");
    const page = [
      "[ok](apis.md) [ok](#own) [ok](../README.md#chat-gateway) [web](https://example.com/a.md)",
      "[gone](nowhere.md) [no heading](apis.md#no-such-heading) [out](../../elsewhere.md)",
      "`[code](not-a-link.md)`",
      "```",
      "[fenced](not-a-link.md)",
      "```",
      "## Own",
      "[later](install.md)",
    ].join("\n");
    const pageOf = (path: string) => (path === file ? page : read(path));
    assert.deepEqual(brokenLinks(file, page, pageOf), [
      "docs/x.md: nowhere.md (no such file)",
      "docs/x.md: apis.md#no-such-heading (no such heading)",
      "docs/x.md: ../../elsewhere.md (outside the repository)",
    ]);
  });
});
