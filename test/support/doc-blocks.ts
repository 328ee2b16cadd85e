// The shell commands of a Markdown document: its fenced blocks marked sh, bash, shell or
// console, each with where it is and, when the line before it says so
// (`<!-- not-run: needs a Kubernetes cluster -->`), why it cannot run on a test machine.

export const SHELL_LANGUAGES = ["sh", "bash", "shell", "console"] as const;

export interface ShellBlock {
  /** the line of the opening fence, from 1 */
  line: number;
  language: string;
  /** the commands as a shell runs them (a console block's `$ ` lines, without the prompt) */
  script: string;
  /** the annotation's reason when the block is not run here */
  notRun?: string;
}

export interface DocBlocks {
  blocks: ShellBlock[];
  /** annotations that annotate nothing or give no reason, unclosed fences */
  problems: string[];
}

const FENCE = /^( *)(`{3,}|~{3,})\s*([^\s`]*)/;
const NOT_RUN = /^\s*<!--\s*not-run:(.*?)-->\s*$/;

export function shellBlocks(markdown: string): DocBlocks {
  const lines = markdown.split("\n");
  const blocks: ShellBlock[] = [];
  const problems: string[] = [];
  let pending: { line: number; reason: string } | undefined;
  for (let i = 0; i < lines.length; i++) {
    const text = lines[i]!;
    const note = NOT_RUN.exec(text);
    if (note) {
      if (pending) problems.push(`line ${pending.line}: a not-run annotation before no sh block`);
      pending = { line: i + 1, reason: note[1]!.trim() };
      if (!pending.reason) problems.push(`line ${i + 1}: a not-run annotation needs a reason`);
      continue;
    }
    const open = FENCE.exec(text);
    if (!open) {
      if (text.trim() && pending) {
        problems.push(`line ${pending.line}: a not-run annotation before no sh block`);
        pending = undefined;
      }
      continue;
    }
    const [, indent, fence, language] = open;
    const close = lines.findIndex(
      (l, j) => j > i && l.trim().startsWith(fence!) && l.trim().replace(/[`~]/g, "") === "",
    );
    if (close === -1) {
      problems.push(`line ${i + 1}: a code block that is never closed`);
      break;
    }
    const body = lines.slice(i + 1, close).map((l) => (l.startsWith(indent!) ? l.slice(indent!.length) : l));
    if ((SHELL_LANGUAGES as readonly string[]).includes(language!)) {
      const script = language === "console" ? consoleCommands(body) : body.join("\n");
      blocks.push({ line: i + 1, language: language!, script, ...(pending && { notRun: pending.reason }) });
    } else if (pending) problems.push(`line ${pending.line}: a not-run annotation before no sh block`);
    pending = undefined;
    i = close;
  }
  if (pending) problems.push(`line ${pending.line}: a not-run annotation before no sh block`);
  return { blocks, problems };
}

/** A console block's commands: the lines after a `$ ` prompt, and those a trailing `\` continues. */
function consoleCommands(body: string[]): string {
  const commands: string[] = [];
  let continued = false;
  for (const line of body) {
    if (continued || line.startsWith("$ ")) {
      commands.push(continued ? line : line.slice(2));
      continued = line.endsWith("\\");
    }
  }
  return commands.join("\n");
}
