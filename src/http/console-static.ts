// Serves the built web console (dist/console, made by `npm run build:console`) at /console.
// Paths without a file extension are the SPA's own routes and get index.html, so a reload or a
// shared link to /console/records works; files are looked up only inside the build folder.
import { createReadStream } from "node:fs";
import { stat } from "node:fs/promises";
import { extname, join, resolve, sep } from "node:path";
import { fileURLToPath } from "node:url";
import type { FastifyInstance, FastifyReply, FastifyRequest } from "fastify";
import { GatewayError } from "../errors/index.ts";

/** Where `npm run build:console` writes the console (vite's outDir). */
export const CONSOLE_DIST = fileURLToPath(new URL("../../dist/console", import.meta.url));

export interface ConsoleStaticOptions {
  /** the build folder; CONSOLE_DIST unless a test points elsewhere */
  dir?: string;
}

const CONTENT_TYPES: Record<string, string> = {
  ".html": "text/html; charset=utf-8",
  ".js": "text/javascript; charset=utf-8",
  ".mjs": "text/javascript; charset=utf-8",
  ".css": "text/css; charset=utf-8",
  ".json": "application/json; charset=utf-8",
  ".map": "application/json; charset=utf-8",
  ".webmanifest": "application/manifest+json; charset=utf-8",
  ".svg": "image/svg+xml",
  ".png": "image/png",
  ".jpg": "image/jpeg",
  ".jpeg": "image/jpeg",
  ".gif": "image/gif",
  ".webp": "image/webp",
  ".ico": "image/x-icon",
  ".woff": "font/woff",
  ".woff2": "font/woff2",
  ".txt": "text/plain; charset=utf-8",
};

/**
 * The built app loads only its own script and stylesheet files and talks only to its own
 * origin; nothing inline, no framing. React sets element styles through the CSSOM, which
 * `style-src 'self'` allows, and the charts are SVG elements, not data URLs.
 */
export const CONSOLE_CSP = [
  "default-src 'self'",
  "script-src 'self'",
  "style-src 'self'",
  "img-src 'self' data:",
  "font-src 'self'",
  "connect-src 'self'",
  "object-src 'none'",
  "base-uri 'none'",
  "form-action 'self'",
  "frame-ancestors 'none'",
].join("; ");

const HTML_HEADERS = {
  "content-security-policy": CONSOLE_CSP,
  "x-content-type-options": "nosniff",
  "referrer-policy": "same-origin",
  "x-frame-options": "DENY",
  // the page names the current build's hashed files: always ask whether it changed
  "cache-control": "no-cache",
};

/** Vite's output names under assets/ carry a content hash, so they never change. */
const IMMUTABLE = "public, max-age=31536000, immutable";

/** A file of the build: regular files only, never a folder or anything outside the build. */
async function findFile(
  root: string,
  relative: string,
): Promise<{ path: string; size: number; mtimeMs: number } | null> {
  const segments = relative.split("/");
  // "..", ".", dotfiles, empty segments, backslashes and NUL never name a file of the build;
  // refusing them here (before any path joining) is what keeps the lookup inside the folder.
  for (const s of segments)
    if (s === "" || s.startsWith(".") || s.includes("\\") || s.includes("\0")) return null;
  const path = join(root, ...segments);
  if (!path.startsWith(root + sep)) return null;
  try {
    const info = await stat(path);
    return info.isFile() ? { path, size: info.size, mtimeMs: info.mtimeMs } : null;
  } catch {
    return null;
  }
}

function sendFile(
  request: FastifyRequest,
  reply: FastifyReply,
  file: { path: string; size: number; mtimeMs: number },
  headers: Record<string, string>,
) {
  const etag = `W/"${file.size.toString(16)}-${Math.floor(file.mtimeMs).toString(16)}"`;
  reply.headers(headers).header("etag", etag);
  if (request.headers["if-none-match"] === etag) return reply.code(304).send();
  reply
    .type(CONTENT_TYPES[extname(file.path).toLowerCase()] ?? "application/octet-stream")
    .header("content-length", file.size);
  if (request.method === "HEAD") return reply.send();
  return reply.send(createReadStream(file.path));
}

export async function consoleStatic(app: FastifyInstance, options: ConsoleStaticOptions): Promise<void> {
  const root = resolve(options.dir ?? CONSOLE_DIST);

  async function serve(request: FastifyRequest, reply: FastifyReply, relative: string) {
    const index = await findFile(root, "index.html");
    if (!index) {
      const error = new GatewayError("console_not_built");
      return reply
        .code(error.status)
        .type("application/json")
        .header("cache-control", "no-store")
        .send(error.toBody());
    }
    const last = relative.split("/").at(-1) ?? "";
    // No extension: a route of the SPA (/console/records, /console/tickets/t_1), not a file.
    if (!last.includes(".")) return sendFile(request, reply, index, HTML_HEADERS);
    const file = await findFile(root, relative);
    if (!file)
      throw new GatewayError("route_not_found", {
        message: `Unknown route: ${request.method} ${request.url.split("?")[0]!.slice(0, 200)}`,
      });
    if (file.path === index.path) return sendFile(request, reply, file, HTML_HEADERS);
    return sendFile(request, reply, file, {
      "x-content-type-options": "nosniff",
      "cache-control": relative.startsWith("assets/") ? IMMUTABLE : "no-cache",
    });
  }

  app.get("/console", (request, reply) => serve(request, reply, ""));
  app.get("/console/*", (request, reply) => serve(request, reply, (request.params as { "*": string })["*"]));
}
