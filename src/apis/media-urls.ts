// The URLs of images and files a request hands an upstream to fetch. The gateway fetches
// nothing itself, but a self-hosted upstream that fetches image URLs (vLLM does) can be
// steered into its own network by one: `http://169.254.169.254/…` (cloud metadata),
// `http://127.0.0.1:6379/` (a Redis beside it), `file:///etc/passwd`. One rule on every API,
// checked on the call as the route parsed it (the canonical request and the body in the
// client's own form): `https:` and `data:` pass; `http:` only where the operator allows it;
// any other scheme is refused; and a host that is a literal loopback, link-local, private or
// unspecified address (or `localhost`) is refused unless the operator allows private hosts.
// Names are not resolved: a public name that points inward is the upstream's network policy
// to stop, as it is for any client of that upstream.
import { isIP } from "node:net";
import type { MediaUrlPolicy } from "../config/schema.ts";
import { GatewayError } from "../errors/index.ts";
import type { ClientCall } from "./types.ts";

/** IPv4 ranges no upstream should be sent to fetch from: [first octets, prefix length]. */
const PRIVATE_V4: ReadonlyArray<readonly [number, number, number]> = [
  [0, 0, 8], // "this network", 0.0.0.0
  [10, 0, 8],
  [100, 64, 10], // carrier-grade NAT
  [127, 0, 8],
  [169, 254, 16], // link-local: cloud metadata services
  [172, 16, 12],
  [192, 168, 16],
  [198, 18, 15], // benchmarking
];

function privateV4(host: string): boolean {
  const parts = host.split(".").map(Number);
  const value = ((parts[0]! << 24) | (parts[1]! << 16) | (parts[2]! << 8) | parts[3]!) >>> 0;
  return PRIVATE_V4.some(([a, b, bits]) => {
    const base = ((a << 24) | (b << 16)) >>> 0;
    const mask = bits === 0 ? 0 : (~0 << (32 - bits)) >>> 0;
    return (value & mask) === (base & mask);
  });
}

function privateV6(host: string): boolean {
  const h = host.toLowerCase();
  if (h === "::" || h === "::1") return true;
  // IPv4-mapped (::ffff:127.0.0.1, which the URL parser writes as ::ffff:7f00:1)
  const mapped = h.match(/^::ffff:([0-9a-f]{1,4}):([0-9a-f]{1,4})$/);
  if (mapped) {
    const hi = Number.parseInt(mapped[1]!, 16);
    const lo = Number.parseInt(mapped[2]!, 16);
    return privateV4(`${hi >> 8}.${hi & 255}.${lo >> 8}.${lo & 255}`);
  }
  if (/^::ffff:\d+\.\d+\.\d+\.\d+$/.test(h)) return privateV4(h.slice(7));
  // fc00::/7 unique local, fe80::/10 link-local
  return /^f[cd][0-9a-f]{0,2}:/.test(h) || /^fe[89ab][0-9a-f]?:/.test(h);
}

/** Whether a URL's host is one an upstream must not be sent to (a literal inward address). */
export function inwardHost(hostname: string): boolean {
  const host = hostname.replace(/^\[|\]$/g, "");
  if (host === "localhost" || host.endsWith(".localhost")) return true;
  const kind = isIP(host);
  if (kind === 4) return privateV4(host);
  if (kind === 6) return privateV6(host);
  return false;
}

/** Why `url` may not go upstream, or undefined when it may. */
export function mediaUrlProblem(url: string, policy: MediaUrlPolicy): string | undefined {
  if (url.startsWith("data:")) return undefined;
  let parsed: URL;
  try {
    parsed = new URL(url);
  } catch {
    return "is not a URL";
  }
  if (parsed.protocol === "http:" && !policy.allow_http)
    return "must be an https: or data: URL (the gateway's operator does not allow plain http)";
  if (parsed.protocol !== "https:" && parsed.protocol !== "http:") return "must be an https: or data: URL";
  if (!policy.allow_private_hosts && inwardHost(parsed.hostname))
    return "must not point at a loopback, link-local or private address";
  return undefined;
}

type Json = Record<string, unknown>;
const isObject = (v: unknown): v is Json => typeof v === "object" && v !== null && !Array.isArray(v);

/** The URLs one content part or block hands an upstream, with where they are in it. */
function partUrls(part: unknown, at: string, out: Array<[string, string]>): void {
  if (!isObject(part)) return;
  // chat completions: {type: image_url, image_url: {url}}; Responses: {type: input_image, image_url}
  const image = part.image_url;
  if (typeof image === "string") out.push([image, `${at}.image_url`]);
  else if (isObject(image) && typeof image.url === "string") out.push([image.url, `${at}.image_url.url`]);
  if (typeof part.file_url === "string") out.push([part.file_url, `${at}.file_url`]);
  // Messages: {type: image|document, source: {type: url, url}}
  const source = part.source;
  if (isObject(source) && source.type === "url" && typeof source.url === "string")
    out.push([source.url, `${at}.source.url`]);
  // parts inside a tool's result or output
  for (const key of ["content", "output"] as const)
    if (Array.isArray(part[key]))
      (part[key] as unknown[]).forEach((p, i) => {
        partUrls(p, `${at}.${key}[${i}]`, out);
      });
}

/** Every media URL of a list of messages or items. */
function listUrls(list: unknown, name: string, out: Array<[string, string]>): void {
  if (!Array.isArray(list)) return;
  list.forEach((entry, i) => {
    if (!isObject(entry)) return;
    for (const key of ["content", "output"] as const)
      if (Array.isArray(entry[key]))
        (entry[key] as unknown[]).forEach((p, j) => {
          partUrls(p, `${name}[${i}].${key}[${j}]`, out);
        });
  });
}

/**
 * Refuses a call that hands an upstream a URL the policy does not allow: 400 naming the part,
 * before anything is reserved or sent.
 */
export function checkMediaUrls(call: ClientCall, policy: MediaUrlPolicy): void {
  const urls: Array<[string, string]> = [];
  // the client's own form first: a refusal names the part where the client put it
  const body = call.native?.body;
  if (body) {
    listUrls(body.messages, "messages", urls);
    listUrls(body.input, "input", urls);
  }
  listUrls(call.request.messages, "messages", urls);
  for (const [url, param] of urls) {
    const problem = mediaUrlProblem(url, policy);
    if (problem)
      throw new GatewayError("invalid_request", {
        message: `The URL at ${param} ${problem}.`,
        param,
      });
  }
}
