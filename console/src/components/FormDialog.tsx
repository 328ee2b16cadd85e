// A form in a modal dialog: its fields, the error of the last submit, Cancel, and the submit
// button, disabled while the submit hook's request is on its way (no second submit).
import type { ReactNode } from "react";
import type { Submit } from "../submit.ts";
import { Dialog } from "./Dialog.tsx";
import { ErrorNotice } from "./Notice.tsx";

export function FormDialog({
  open = true,
  title,
  description,
  onClose,
  submit,
  label,
  busyLabel = label,
  disabled = false,
  wide = false,
  children,
}: {
  /** a form mounted for one opening leaves it true, and closes by going away */
  open?: boolean;
  title: string;
  /** a short line under the title */
  description?: ReactNode;
  onClose: () => void;
  submit: Submit;
  /** the submit button's text, and what it says while the request is on its way */
  label: string;
  busyLabel?: string;
  /** nothing to send yet, e.g. the role unchanged */
  disabled?: boolean;
  /** room for a long form (a catalog entry with its JSON) */
  wide?: boolean;
  children: ReactNode;
}) {
  return (
    <Dialog open={open} title={title} onClose={onClose} description={description} wide={wide}>
      <form onSubmit={submit.onSubmit}>
        <ErrorNotice error={submit.error} />
        {children}
        <div className="dialog-actions">
          <button type="button" className="btn" onClick={onClose}>
            Cancel
          </button>
          <button type="submit" className="btn btn-primary" disabled={disabled || submit.busy}>
            {submit.busy ? busyLabel : label}
          </button>
        </div>
      </form>
    </Dialog>
  );
}
