// A question before something that cannot be undone (delete a provider, revoke a token): the
// safe choice has the focus, so Enter does not do it by accident.
import type { ReactNode } from "react";
import { useSubmit } from "../submit.ts";
import { Dialog } from "./Dialog.tsx";
import { ErrorNotice } from "./Notice.tsx";

export function ConfirmDialog({
  title,
  children,
  confirm,
  busyLabel,
  keep,
  onCancel,
  action,
}: {
  title: string;
  /** what will happen */
  children: ReactNode;
  /** the button that does it: "Delete provider" */
  confirm: string;
  busyLabel: string;
  /** the button that does not: "Keep it" */
  keep: string;
  onCancel: () => void;
  /** does it, then reports (closes the dialog); a failure stays in the dialog */
  action: () => Promise<void>;
}) {
  const run = useSubmit(action);
  return (
    <Dialog open title={title} onClose={onCancel}>
      <ErrorNotice error={run.error} />
      {children}
      <div className="dialog-actions">
        <button type="button" className="btn" onClick={onCancel} data-autofocus>
          {keep}
        </button>
        <button type="button" className="btn btn-danger" onClick={() => run.run()} disabled={run.busy}>
          {run.busy ? busyLabel : confirm}
        </button>
      </div>
    </Dialog>
  );
}
