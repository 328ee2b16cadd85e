// The Chromium the browser tests drive, so `npm test` runs on a machine with only what
// `npm install` brings: CHROMIUM_PATH when set; else Debian's /usr/bin/chromium; else the
// headless Chromium that the @sparticuz/chromium dev dependency ships (x86_64 Linux), unpacked
// once into the temp folder with the libraries (NSS) and fonts it needs beside it.
// CHROMIUM_FROM_PACKAGE=1 skips the system browser, to try the packaged one where both exist.
import { spawnSync } from "node:child_process";
import { existsSync, mkdirSync, readFileSync, renameSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { fileURLToPath } from "node:url";

const SYSTEM_CHROMIUM = "/usr/bin/chromium";
const PACKAGE = "@sparticuz/chromium";

export interface ChromiumBinary {
  executablePath: string;
  /** the environment it must run with (libraries and fonts of the packaged browser) */
  env: Record<string, string | undefined>;
  /** where it came from, for messages */
  source: string;
}

export async function findChromium(): Promise<ChromiumBinary> {
  const env = { ...process.env };
  const given = process.env.CHROMIUM_PATH;
  if (given) {
    if (!existsSync(given)) throw new Error(`CHROMIUM_PATH names ${given}, which does not exist.`);
    return { executablePath: given, env, source: "CHROMIUM_PATH" };
  }
  if (process.env.CHROMIUM_FROM_PACKAGE !== "1" && existsSync(SYSTEM_CHROMIUM))
    return { executablePath: SYSTEM_CHROMIUM, env, source: SYSTEM_CHROMIUM };
  return packagedChromium();
}

/**
 * The package unpacks into the temp folder itself, in place: a run cut short would leave a
 * half-written browser there that later runs take for whole. So it unpacks in a child process
 * whose temp folder is a fresh one of ours, renamed into place once complete.
 */
async function packagedChromium(): Promise<ChromiumBinary> {
  if (process.platform !== "linux" || process.arch !== "x64")
    throw new Error(
      `No Chromium: ${SYSTEM_CHROMIUM} is missing and ${PACKAGE} ships one for x86_64 Linux only. ` +
        "Install Chromium, or point CHROMIUM_PATH at one.",
    );
  let url: string;
  try {
    url = import.meta.resolve(PACKAGE);
  } catch {
    throw new Error(
      `No Chromium: ${SYSTEM_CHROMIUM} is missing and ${PACKAGE} is not installed (run npm install).`,
    );
  }
  const root = fileURLToPath(new URL("../", url));
  const manifest = JSON.parse(readFileSync(join(root, "package.json"), "utf8")) as { version: string };
  const dir = join(tmpdir(), `chat-gateway-chromium-${manifest.version}`);
  if (!existsSync(join(dir, "chromium"))) {
    const staging = `${dir}.${process.pid}.tmp`;
    rmSync(staging, { recursive: true, force: true });
    mkdirSync(staging, { recursive: true });
    const unpack = spawnSync(
      process.execPath,
      [
        "--input-type=module",
        "-e",
        `const { default: chromium, inflate } = await import(${JSON.stringify(url)});
         await chromium.executablePath();
         await inflate(${JSON.stringify(join(root, "bin", "al2023.tar.br"))});`,
      ],
      { env: { ...process.env, TMPDIR: staging }, encoding: "utf8" },
    );
    if (unpack.status !== 0) {
      rmSync(staging, { recursive: true, force: true });
      throw new Error(`Could not unpack ${PACKAGE}: ${unpack.stderr}`);
    }
    // its own fontconfig file names /tmp/fonts: ours names where the fonts are, then the system's
    writeFileSync(
      join(staging, "fonts.conf"),
      `<?xml version="1.0"?>\n<!DOCTYPE fontconfig SYSTEM "fonts.dtd">\n<fontconfig>\n` +
        `  <dir>${join(dir, "fonts", "fonts")}</dir>\n` +
        `  <include ignore_missing="yes">/etc/fonts/fonts.conf</include>\n` +
        `  <cachedir>${join(dir, "fonts-cache")}</cachedir>\n</fontconfig>\n`,
    );
    try {
      renameSync(staging, dir);
    } catch {
      // another test process unpacked it first
      rmSync(staging, { recursive: true, force: true });
    }
  }
  const libraries = [join(dir, "al2023", "lib"), dir, process.env.LD_LIBRARY_PATH].filter(Boolean).join(":");
  return {
    executablePath: join(dir, "chromium"),
    env: { ...process.env, LD_LIBRARY_PATH: libraries, FONTCONFIG_FILE: join(dir, "fonts.conf") },
    source: `${PACKAGE} ${manifest.version}`,
  };
}
