// A card of one list an administrator manages: the heading that names it, the button that
// adds to it, what the last change did (a polite status line), then the table and its dialogs.
// useListDialog() holds which dialog is open and ends each the same way: closed, said, reloaded.
import { type ReactNode, useState } from "react";
import { Status } from "./Notice.tsx";

export function ListSection({
  id,
  title,
  action,
  intro,
  status,
  children,
}: {
  /** the heading's id; the section is named by it */
  id: string;
  title: string;
  /** the primary button beside the heading, e.g. "Create account" */
  action?: { label: string; onClick: () => void };
  /** a line under the heading, above the status */
  intro?: ReactNode;
  /** what the last change did; empty shows nothing */
  status: string;
  children: ReactNode;
}) {
  return (
    <section className="card section" aria-labelledby={id}>
      <div className="section-head">
        <h2 id={id}>{title}</h2>
        {action && (
          <button type="button" className="btn btn-primary" onClick={action.onClick}>
            {action.label}
          </button>
        )}
      </div>
      {intro}
      {status && <Status>{status}</Status>}
      {children}
    </section>
  );
}

/** Which of a list's dialogs is open (`Open` says which, and on what row), and the list's status line. */
export function useListDialog<Open>(list: { reload: () => void }) {
  const [open, setOpen] = useState<Open | null>(null);
  const [status, setStatus] = useState("");
  return {
    open,
    show: (what: Open) => setOpen(what),
    close: () => setOpen(null),
    status,
    /** a dialog or a row's action changed the list: close the dialog, say what changed, reload */
    saved(message: string) {
      setOpen(null);
      setStatus(message);
      list.reload();
    },
  };
}
