// Structured JSON logs. Secrets must never reach them: authorization headers and anything
// named like a key are redacted wherever they appear in a logged object.
import { type Logger, type LoggerOptions, pino } from "pino";

export const REDACT_PATHS = [
  "req.headers.authorization",
  "headers.authorization",
  "authorization",
  "*.authorization",
  // Anthropic's key header (the Messages API)
  'req.headers["x-api-key"]',
  'headers["x-api-key"]',
  '*["x-api-key"]',
  "secret",
  "*.secret",
  "api_key",
  "*.api_key",
  "password",
  "*.password",
];

export function createLogger(level: LoggerOptions["level"], destination?: NodeJS.WritableStream): Logger {
  const options: LoggerOptions = {
    level,
    base: { service: "chat-gateway" },
    redact: { paths: REDACT_PATHS, censor: "[redacted]" },
  };
  return destination ? pino(options, destination) : pino(options);
}
