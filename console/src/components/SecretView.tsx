import { type ReactNode, useId } from "react";
import { CopyButton } from "./CopyButton.tsx";

/** A secret shown once (a new API key, a new admin token): the field, a copy button, advice, done. */
export function SecretView({
  label,
  secret,
  onDone,
  children,
}: {
  /** the field's label: "API key" */
  label: string;
  secret: string;
  onDone: () => void;
  /** advice on using it */
  children?: ReactNode;
}) {
  const id = useId();
  return (
    <>
      <div className="field">
        <label htmlFor={id}>{label}</label>
        <div className="input-row">
          <input id={id} className="mono" readOnly value={secret} onFocus={(e) => e.target.select()} />
          <CopyButton text={secret} fieldId={id} />
        </div>
      </div>
      {children && <p className="notice notice-info">{children}</p>}
      <div className="dialog-actions">
        <button type="button" className="btn btn-primary" onClick={onDone}>
          I have copied it
        </button>
      </div>
    </>
  );
}
