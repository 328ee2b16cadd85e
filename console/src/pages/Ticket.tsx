import { useId, useState } from "react";
import { api, useApi } from "../api.ts";
import { Badge } from "../components/Badge.tsx";
import { ErrorNotice, Loading, Status } from "../components/Notice.tsx";
import { PageHeader } from "../components/PageHeader.tsx";
import { fmtDateTime, fromLocalInput, paramsText, timeZone, toLocalInput } from "../format.ts";
import { Link, navigate, useLocation } from "../router.tsx";
import { useSession } from "../session.tsx";
import { useSubmit } from "../submit.ts";
import { KIND_LABELS, STATUS_LABELS, type TicketDraft } from "../tickets.ts";
import {
  type KeyView,
  type List,
  type ModelView,
  type NewTicketBody,
  TICKET_STATUSES,
  type TicketAnswer,
  type TicketKind,
  type TicketStatus,
  type TicketThread,
  type TicketView,
} from "../types.ts";

const KIND_HINTS: Record<TicketKind, string> = {
  problem: "A call failed or did something unexpected. Give the call's details so we can find it.",
  plan_upgrade: "Name the plan you want and why; quota and models change once it is done.",
  older_history:
    "Records older than a year, or beyond the newest 1,000, are kept only as daily totals; say which period you need.",
  extra_export: "An export beyond what the Call records page offers: say which period, keys and format.",
};

/** Parameters typed (or copied from a record) as a JSON object are sent as one; else as text. */
function structured(text: string): string | Record<string, unknown> {
  try {
    const value: unknown = JSON.parse(text);
    if (value && typeof value === "object" && !Array.isArray(value)) return value as Record<string, unknown>;
  } catch {
    // free text, e.g. "temperature 0.2, streaming"
  }
  return text;
}

export function NewTicketPage() {
  const location = useLocation();
  const draft = ((location.state as { draft?: TicketDraft } | null)?.draft ?? {}) as TicketDraft;
  const kindFromUrl = location.query.get("kind") as TicketKind | null;
  return (
    <NewTicketForm
      key={JSON.stringify(draft) + (kindFromUrl ?? "")}
      draft={{ kind: kindFromUrl ?? undefined, ...draft }}
    />
  );
}

function NewTicketForm({ draft }: { draft: TicketDraft }) {
  const keys = useApi<List<KeyView>>("/keys");
  const models = useApi<List<ModelView>>("/models");
  const [kind, setKind] = useState<TicketKind>(draft.kind ?? "problem");
  const [subject, setSubject] = useState(draft.subject ?? "");
  const [description, setDescription] = useState(draft.description ?? "");
  const [problemAt, setProblemAt] = useState(draft.problem_at ? toLocalInput(draft.problem_at) : "");
  const [keyId, setKeyId] = useState(draft.key_id ?? "");
  const [model, setModel] = useState(draft.model ?? "");
  const [params, setParams] = useState(draft.params ?? "");
  const [error, setError] = useState(draft.error ?? "");
  const [requestId, setRequestId] = useState(draft.request_id ?? "");
  const id = useId();

  const submit = useSubmit(async () => {
    const body: NewTicketBody = { kind, subject: subject.trim(), description: description.trim() };
    if (kind === "problem") {
      const at = fromLocalInput(problemAt);
      if (at !== undefined) body.problem_at = at;
      if (keyId) body.key_id = keyId;
      if (model.trim()) body.model = model.trim();
      if (params.trim()) body.params = structured(params.trim());
      if (error.trim()) body.error = error.trim();
      if (requestId.trim()) body.request_id = requestId.trim();
    }
    const { ticket } = await api<TicketAnswer>("/tickets", { method: "POST", body });
    navigate(`/tickets/${encodeURIComponent(ticket.id)}`, { replace: true, state: { created: true } });
  });

  const keyKnown = keys.data?.data.some((k) => k.id === keyId) ?? false;
  return (
    <>
      <PageHeader title="New ticket">
        <p>
          {draft.source ? (
            <>
              Prefilled from <strong>{draft.source}</strong>. Check the details, then describe what you
              expected.
            </>
          ) : (
            "Tell us what you need; we answer on the ticket."
          )}
        </p>
      </PageHeader>
      <form className="card section form" onSubmit={submit.onSubmit} aria-labelledby="page-title">
        <ErrorNotice error={submit.error} />
        <div className="form-grid">
          <div className="field">
            <label htmlFor={`${id}-kind`}>Kind</label>
            <select id={`${id}-kind`} value={kind} onChange={(e) => setKind(e.target.value as TicketKind)}>
              {(Object.keys(KIND_LABELS) as TicketKind[]).map((k) => (
                <option key={k} value={k}>
                  {KIND_LABELS[k]}
                </option>
              ))}
            </select>
            <p className="hint">{KIND_HINTS[kind]}</p>
          </div>
          <div className="field">
            <label htmlFor={`${id}-subject`}>Subject</label>
            <input
              id={`${id}-subject`}
              required
              maxLength={200}
              value={subject}
              onChange={(e) => setSubject(e.target.value)}
            />
          </div>
        </div>
        {kind === "problem" && (
          <fieldset className="fieldset">
            <legend>The call</legend>
            <div className="form-grid">
              <div className="field">
                <label htmlFor={`${id}-at`}>Time of the problem</label>
                <input
                  id={`${id}-at`}
                  type="datetime-local"
                  step={1}
                  value={problemAt}
                  onChange={(e) => setProblemAt(e.target.value)}
                  aria-describedby={`${id}-at-hint`}
                />
                <p className="hint" id={`${id}-at-hint`}>
                  In your time zone, {timeZone()}.
                </p>
              </div>
              <div className="field">
                <label htmlFor={`${id}-key`}>Key</label>
                <select id={`${id}-key`} value={keyId} onChange={(e) => setKeyId(e.target.value)}>
                  <option value="">Not about one key</option>
                  {keys.data?.data.map((k) => (
                    <option key={k.id} value={k.id}>
                      {k.prefix}… {k.name ?? ""}
                    </option>
                  ))}
                  {keyId && !keyKnown && <option value={keyId}>{draft.key_label ?? keyId}</option>}
                </select>
              </div>
              <div className="field">
                <label htmlFor={`${id}-model`}>Model</label>
                <input
                  id={`${id}-model`}
                  list={`${id}-models`}
                  value={model}
                  onChange={(e) => setModel(e.target.value)}
                />
                <datalist id={`${id}-models`}>
                  {models.data?.data.map((m) => (
                    <option key={m.id} value={m.id} />
                  ))}
                </datalist>
              </div>
              <div className="field">
                <label htmlFor={`${id}-request`}>Request id</label>
                <input
                  id={`${id}-request`}
                  className="mono"
                  value={requestId}
                  placeholder="req_… (from the x-request-id header)"
                  onChange={(e) => setRequestId(e.target.value)}
                />
              </div>
            </div>
            <div className="field">
              <label htmlFor={`${id}-params`}>Main parameters</label>
              <textarea
                id={`${id}-params`}
                className="mono"
                rows={3}
                value={params}
                placeholder='e.g. {"temperature": 0.2, "max_tokens": 500, "stream": true}'
                onChange={(e) => setParams(e.target.value)}
              />
            </div>
            <div className="field">
              <label htmlFor={`${id}-error`}>Error returned</label>
              <input
                id={`${id}-error`}
                value={error}
                placeholder="e.g. upstream_error · HTTP 502"
                onChange={(e) => setError(e.target.value)}
              />
            </div>
          </fieldset>
        )}
        <div className="field">
          <label htmlFor={`${id}-description`}>Description</label>
          <textarea
            id={`${id}-description`}
            required
            rows={6}
            value={description}
            placeholder={kind === "problem" ? "What happened, and what did you expect?" : "What do you need?"}
            onChange={(e) => setDescription(e.target.value)}
          />
        </div>
        <div className="form-actions">
          <Link to="/tickets" className="btn">
            Cancel
          </Link>
          <button type="submit" className="btn btn-primary" disabled={submit.busy}>
            {submit.busy ? "Sending…" : "Open ticket"}
          </button>
        </div>
      </form>
    </>
  );
}

export function TicketPage({ id }: { id: string }) {
  const session = useSession();
  const location = useLocation();
  const loaded = useApi<TicketThread>(`/tickets/${encodeURIComponent(id)}`);
  const [status, setStatus] = useState("");
  const justCreated = (location.state as { created?: boolean } | null)?.created === true;

  if (loaded.error)
    return (
      <>
        <PageHeader title="Ticket" />
        <ErrorNotice error={loaded.error} onRetry={loaded.reload} />
        <p>
          <Link to="/tickets">Back to the tickets</Link>
        </p>
      </>
    );
  if (!loaded.data)
    return (
      <>
        <PageHeader title="Ticket" />
        <Loading what="Loading the ticket" />
      </>
    );
  const { ticket, messages } = loaded.data;
  const params =
    ticket.params && typeof ticket.params === "object"
      ? JSON.stringify(ticket.params, null, 2)
      : paramsText(ticket.params);
  const facts: [string, string | null][] = [
    ["Time of the problem", ticket.problem_at ? `${fmtDateTime(ticket.problem_at)} (your time)` : null],
    ["Key", ticket.key_prefix ? `${ticket.key_prefix}…` : ticket.key_id],
    ["Model", ticket.model],
    ["Error returned", ticket.error],
    ["Request id", ticket.request_id],
  ];
  return (
    <>
      <PageHeader title={ticket.subject}>
        <p className="ticket-meta">
          <Badge value={ticket.status} label={STATUS_LABELS[ticket.status] ?? ticket.status} />{" "}
          <span className="badge badge-muted">{KIND_LABELS[ticket.kind] ?? ticket.kind}</span>{" "}
          <span className="muted">
            opened {fmtDateTime(ticket.created_at)}
            {session.isAdmin && ` · account ${ticket.account_name ?? ticket.account_id}`}
          </span>
        </p>
      </PageHeader>
      {justCreated && <Status>Ticket opened. We answer here; you will see the reply on this page.</Status>}
      {status && <Status>{status}</Status>}
      <p>
        <Link to="/tickets">← All tickets</Link>
      </p>
      <section className="card section" aria-labelledby="ticket-details">
        <h2 id="ticket-details">Details</h2>
        <dl className="details">
          {facts
            .filter(([, v]) => v)
            .map(([label, value]) => (
              <div key={label}>
                <dt>{label}</dt>
                <dd data-field={label}>{value}</dd>
              </div>
            ))}
        </dl>
        {params && (
          <>
            <h3>Main parameters</h3>
            <pre className="code-block" data-field="Main parameters">
              {params}
            </pre>
          </>
        )}
        <h3>Description</h3>
        <p className="prewrap">{ticket.description || <span className="muted">none</span>}</p>
      </section>
      <section className="card section" aria-labelledby="thread-title">
        <h2 id="thread-title">Replies</h2>
        {messages.length === 0 ? (
          <p className="muted">No replies yet.</p>
        ) : (
          <ol className="thread">
            {messages.map((m) => (
              <li key={m.id} className={m.author_role === "admin" ? "message message-support" : "message"}>
                <p className="message-head">
                  <strong>
                    {m.author_role === "admin" ? "Support" : (m.author_email ?? "a former user")}
                  </strong>
                  {m.author_role === "admin" && <span className="muted"> ({m.author_email})</span>}{" "}
                  <span className="muted small">{fmtDateTime(m.created_at)}</span>
                </p>
                <p className="prewrap message-body">{m.body}</p>
              </li>
            ))}
          </ol>
        )}
        <ReplyForm
          ticket={ticket}
          onSent={() => {
            setStatus("Reply sent.");
            loaded.reload();
          }}
        />
      </section>
      {(session.canManage || session.isAdmin) && (
        <TicketStatusControl
          ticket={ticket}
          isAdmin={session.isAdmin}
          onChanged={(s) => {
            setStatus(`Status set to ${s}.`);
            loaded.reload();
          }}
        />
      )}
    </>
  );
}

function ReplyForm({ ticket, onSent }: { ticket: TicketView; onSent: () => void }) {
  const { isAdmin } = useSession();
  const [body, setBody] = useState("");
  const id = useId();
  const submit = useSubmit(async () => {
    if (!body.trim()) return;
    await api(`/tickets/${encodeURIComponent(ticket.id)}/messages`, {
      method: "POST",
      body: { body: body.trim() },
    });
    setBody("");
    onSent();
  });
  return (
    <form className="reply" onSubmit={submit.onSubmit}>
      <ErrorNotice error={submit.error} />
      <div className="field">
        <label htmlFor={id}>{isAdmin ? "Answer" : "Your reply"}</label>
        <textarea id={id} rows={4} required value={body} onChange={(e) => setBody(e.target.value)} />
        <p className="hint">
          {isAdmin
            ? "Sending marks the ticket answered."
            : ticket.status === "closed"
              ? "Replying reopens the ticket."
              : "Sending keeps the ticket open until support answers."}
        </p>
      </div>
      <button type="submit" className="btn btn-primary" disabled={submit.busy || !body.trim()}>
        {submit.busy ? "Sending…" : isAdmin ? "Send answer" : "Send reply"}
      </button>
    </form>
  );
}

function TicketStatusControl({
  ticket,
  isAdmin,
  onChanged,
}: {
  ticket: TicketView;
  isAdmin: boolean;
  onChanged: (status: TicketStatus) => void;
}) {
  const [value, setValue] = useState<TicketStatus>(ticket.status);
  const id = useId();
  const set = useSubmit(async (status: TicketStatus) => {
    await api(`/tickets/${encodeURIComponent(ticket.id)}`, { method: "PATCH", body: { status } });
    onChanged(status);
  });
  return (
    <section className="card section" aria-labelledby={`${id}-title`}>
      <h2 id={`${id}-title`}>Status</h2>
      <ErrorNotice error={set.error} />
      {isAdmin ? (
        <form
          className="inline-form"
          onSubmit={(e) => {
            e.preventDefault();
            set.run(value);
          }}
        >
          <div className="field">
            <label htmlFor={id}>Ticket status</label>
            <select id={id} value={value} onChange={(e) => setValue(e.target.value as TicketStatus)}>
              {TICKET_STATUSES.map((s) => (
                <option key={s} value={s}>
                  {STATUS_LABELS[s]}
                </option>
              ))}
            </select>
          </div>
          <button type="submit" className="btn" disabled={set.busy || value === ticket.status}>
            Set status
          </button>
        </form>
      ) : ticket.status === "closed" ? (
        <p className="muted">This ticket is closed. A reply reopens it.</p>
      ) : (
        <>
          <p className="muted">Solved? Close the ticket; a later reply reopens it.</p>
          <button type="button" className="btn" onClick={() => set.run("closed")} disabled={set.busy}>
            Close ticket
          </button>
        </>
      )}
    </section>
  );
}
