// Installs the client libraries the client-library suite runs (test/clients/), at the versions
// pinned in versions.json, into a cache outside the repository: together they are a few
// hundred MB (Mastra alone brings many), which `npm install` of the project must not bring to
// everyone. The folder is named by a hash of the pins, so bumping one installs beside the old
// and never mixes them; an install that completed is reused. Run by `npm run test:clients`
// (./run.ts) before the tests.
//
//   node test/clients/install.ts      # installs if needed, prints the folder
//
// Where: $CHAT_GATEWAY_CLIENTS_DIR when set (used as is), else
// $XDG_CACHE_HOME/chat-gateway-clients/<hash>, else ~/.cache/chat-gateway-clients/<hash>.
import { existsSync } from "node:fs";
import { join } from "node:path";
import { pathToFileURL } from "node:url";
import { isMain } from "../support/mock-provider.ts";
import { installedVersion, installPinned, pinnedDir, readPins } from "../support/pinned-packages.ts";

/** The pinned packages, by npm name: the one place their versions are declared. */
export const VERSIONS = readPins(new URL("./versions.json", import.meta.url));

/** A package's pinned version. */
export function versionOf(pkg: string): string {
  const version = VERSIONS[pkg];
  if (!version) throw new Error(`test/clients/versions.json pins no version of ${pkg}`);
  return version;
}

/** `name@version` of a pinned package, as test names and the docs quote it. */
export const pinned = (pkg: string): string => `${pkg}@${versionOf(pkg)}`;

/** The install folder: named by the pins (and the platform, for packages with native parts). */
export function clientsDir(): string {
  return pinnedDir("chat-gateway-clients", "CHAT_GATEWAY_CLIENTS_DIR", VERSIONS);
}

/**
 * A module the install folder holds, whose dynamic import resolves a library as a package in
 * that folder would import it: Node's ESM resolution with the "import" condition of the
 * libraries' exports, so the suite gets the same module instances the libraries share
 * (one zod, one `ai`) and not their CommonJS twins.
 */
const LOADER = "load.mjs";
const LOADER_TEXT = "export const load = (specifier) => import(specifier);\n";

/** The install folder, installing the pinned versions first when it does not hold them. */
export function installClients(log?: (line: string) => void): string {
  return installPinned({
    name: "chat-gateway-clients",
    pins: VERSIONS,
    dir: clientsDir(),
    // none of these libraries needs an install script to work, and a library's script is code
    // the suite need not run
    scripts: false,
    files: { [LOADER]: LOADER_TEXT },
    check: (dir) =>
      existsSync(join(dir, LOADER)) &&
      Object.entries(VERSIONS).every(([pkg, version]) => installedVersion(dir, pkg) === version),
    ...(log ? { log } : {}),
  });
}

/**
 * A library from the install folder, by its import specifier ("ai", "@langchain/openai",
 * "@langchain/core/tools"). Typed loosely: the suite does not compile against the libraries'
 * types, which live outside the repository.
 */
export async function load(specifier: string, dir = clientsDir()): Promise<any> {
  const loader = join(dir, LOADER);
  if (!existsSync(loader))
    throw new Error(`the client libraries are not installed in ${dir}: run node test/clients/install.ts`);
  const { load: importFrom } = await import(pathToFileURL(loader).href);
  return importFrom(specifier);
}

if (isMain(import.meta.url)) process.stdout.write(`${installClients()}\n`);
