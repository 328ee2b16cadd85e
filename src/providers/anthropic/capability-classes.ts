// The classes of capability an Anthropic-shaped upstream refuses, as Claude Code's gateway
// contract names them: a gateway that rewords an upstream's 400 must make the message the
// token `capability_rejected: <class>` where the refusal is of one of these, since the
// client's recovery matches the upstream's own wording, which the rewording hides (it then
// retries without the construct: a mid-conversation system turn as text, thinking off,
// structured output or effort left out, a beta flag dropped). The table is ordered: the
// first class whose pattern matches wins. Conservative by design: a wrong class triggers the
// wrong recovery, so a message matching none keeps the upstream's words. Context overflows
// ("prompt is too long: …") are not among them: the client reads their numbers, and the
// gateway passes the upstream's words on.
const CLASSES: ReadonlyArray<readonly [string | ((m: RegExpMatchArray) => string), RegExp]> = [
  [
    "mid_conv_system",
    /mid-conversation-system|role.{0,40}system|system.{0,40}(message|role).{0,60}(position|not (allowed|permitted|supported))/i,
  ],
  [
    "thinking_signature",
    /signature in thinking block|data in redacted_thinking block|thinking\.signature: Field required|cannot be modified/i,
  ],
  [(m) => `thinking_type:${m[1]!.toLowerCase()}`, /thinking\.type: (enabled|adaptive)/i],
  [(m) => `thinking_type:${m[1]!.toLowerCase()}`, /(enabled|adaptive) thinking is not supported/i],
  ["structured_outputs_unsupported", /output_config\.format: Extra inputs are not permitted/i],
  [
    "effort_unsupported",
    /does not support the effort parameter|output_config.{0,80}(Extra inputs are not permitted|requires a model that supports)/i,
  ],
  ["media_budget", /Too much media/i],
  ["image_block", /Could not process image|messages\.\d+\.content\.\d+\.image/i],
  ["document_block", /Could not process PDF|does not support PDFs?|\.document\b/i],
  [(m) => `beta_header:${m[1]}`, /Unexpected value\(s\) `([^`]{1,100})` for the `anthropic-beta` header/i],
];

/** The class of capability an upstream's error message refuses, or undefined. */
export function capabilityRefused(message: string | undefined): string | undefined {
  if (!message) return undefined;
  for (const [cls, pattern] of CLASSES) {
    const m = message.match(pattern);
    if (!m) continue;
    return typeof cls === "string" ? cls : cls(m);
  }
  return undefined;
}
