const TONE: Record<string, string> = {
  ok: "good",
  enabled: "good",
  active: "good",
  answered: "good",
  open: "info",
  closed: "muted",
  disabled: "muted",
  error: "bad",
  upstream_error: "bad",
  content_filter: "warn",
  client_disconnect: "warn",
  ready: "good",
  cooling: "warn",
  revoked: "muted",
  create: "good",
  update: "info",
  delete: "bad",
  revoke: "bad",
};

export function Badge({ value, label }: { value: string; label?: string }) {
  return (
    <span className={`badge badge-${TONE[value] ?? "muted"}`}>{label ?? value.replaceAll("_", " ")}</span>
  );
}
