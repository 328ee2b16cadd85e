import type { ReactNode } from "react";

/** The foot of a dialog's form: Cancel, and the submit button labelled by the children. */
export function FormActions({
  onCancel,
  disabled,
  children,
}: {
  onCancel: () => void;
  disabled?: boolean;
  children: ReactNode;
}) {
  return (
    <div className="dialog-actions">
      <button type="button" className="btn" onClick={onCancel}>
        Cancel
      </button>
      <button type="submit" className="btn btn-primary" disabled={disabled}>
        {children}
      </button>
    </div>
  );
}
