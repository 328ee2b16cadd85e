import assert from "node:assert/strict";
import { test } from "node:test";
import { shellBlocks } from "./doc-blocks.ts";

const doc = `# Title

\`\`\`sh
npm run gateway -- migrate
\`\`\`

<!-- not-run: needs a Kubernetes cluster -->
\`\`\`bash
kubectl apply -f gateway.yaml
\`\`\`

\`\`\`yaml
server: { port: 8080 }
\`\`\`

- a list item:

  \`\`\`sh
  curl http://127.0.0.1:8080/healthz
  \`\`\`

\`\`\`console
$ npm run -s gateway -- config check
configuration OK (embedded defaults)
$ echo one \\
  two
one two
\`\`\`
`;

test("finds the shell blocks, where they are, and the reason of those not run", () => {
  const { blocks, problems } = shellBlocks(doc);
  assert.deepEqual(problems, []);
  assert.deepEqual(blocks, [
    { line: 3, language: "sh", script: "npm run gateway -- migrate" },
    {
      line: 8,
      language: "bash",
      script: "kubectl apply -f gateway.yaml",
      notRun: "needs a Kubernetes cluster",
    },
    { line: 18, language: "sh", script: "curl http://127.0.0.1:8080/healthz" },
    {
      line: 22,
      language: "console",
      script: "npm run -s gateway -- config check\necho one \\\n  two",
    },
  ]);
});

test("reports an annotation that annotates no shell block or gives no reason", () => {
  const { problems } = shellBlocks(
    "<!-- not-run: stale -->\nSome text.\n\n<!-- not-run: -->\n```sh\ntrue\n```\n\n<!-- not-run: a yaml block -->\n```yaml\na: 1\n```\n",
  );
  assert.deepEqual(problems, [
    "line 1: a not-run annotation before no sh block",
    "line 4: a not-run annotation needs a reason",
    "line 9: a not-run annotation before no sh block",
  ]);
});

test("reports a block that is never closed", () => {
  assert.deepEqual(shellBlocks("```sh\ntrue\n").problems, ["line 1: a code block that is never closed"]);
});
