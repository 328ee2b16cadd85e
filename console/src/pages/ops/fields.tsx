// The fields of the catalog's forms: a label, a hint, and, when the gateway refused the entry
// naming this field, the field marked; numbers and lists keep what is typed while it is typed.
import { createContext, type ReactNode, useContext, useState } from "react";
import { numberOrText, parseList } from "../../catalog-edit.ts";

/** What the gateway said when it last refused the entry, for the field it named. */
export const Refusal = createContext<string | null>(null);

export interface FieldProps {
  id: string;
  "aria-invalid"?: boolean;
  "aria-describedby"?: string;
}

export function FieldBox({
  id,
  label,
  hint,
  invalid = false,
  children,
}: {
  id: string;
  label: string;
  hint?: ReactNode;
  /** the gateway's last refusal named this field */
  invalid?: boolean;
  children: (props: FieldProps) => ReactNode;
}) {
  const refusal = useContext(Refusal);
  const describedBy = [invalid && `${id}-error`, hint && `${id}-hint`].filter(Boolean).join(" ") || undefined;
  return (
    <div className={invalid ? "field field-invalid" : "field"}>
      <label htmlFor={id}>{label}</label>
      {children({ id, "aria-invalid": invalid || undefined, "aria-describedby": describedBy })}
      {invalid && (
        <p className="field-error" id={`${id}-error`}>
          {refusal ?? "The gateway refused this field."}
        </p>
      )}
      {hint && (
        <p className="hint" id={`${id}-hint`}>
          {hint}
        </p>
      )}
    </div>
  );
}

/**
 * A number field: what is typed stays as typed ("2." on the way to "2.5"), the entry gets the
 * number (or the text, for the server to refuse naming the field; undefined when empty).
 * Mounted with the form, so it starts from the entry's value.
 */
export function NumberInput({
  value,
  onChange,
  integer = false,
  placeholder,
  ...field
}: FieldProps & {
  value: unknown;
  onChange: (value: number | string | undefined) => void;
  integer?: boolean;
  placeholder?: string;
}) {
  const [text, setText] = useState(value === undefined || value === null ? "" : String(value));
  return (
    <input
      {...field}
      inputMode={integer ? "numeric" : "decimal"}
      value={text}
      placeholder={placeholder}
      onChange={(e) => {
        setText(e.target.value);
        onChange(numberOrText(e.target.value, integer));
      }}
    />
  );
}

/** A list as text, one item a line (or separated by commas); the entry gets the items. */
export function ListInput({
  value,
  onChange,
  rows = 3,
  placeholder,
  ...field
}: FieldProps & {
  value: unknown;
  onChange: (value: string[]) => void;
  rows?: number;
  placeholder?: string;
}) {
  const [text, setText] = useState(Array.isArray(value) ? value.join("\n") : "");
  return (
    <textarea
      {...field}
      className="mono"
      rows={rows}
      spellCheck={false}
      value={text}
      placeholder={placeholder}
      onChange={(e) => {
        setText(e.target.value);
        onChange(parseList(e.target.value));
      }}
    />
  );
}

/** A text field whose empty value removes the field from the entry. */
export function TextInput({
  value,
  onChange,
  placeholder,
  required,
  ...field
}: FieldProps & {
  value: unknown;
  onChange: (value: string | undefined) => void;
  placeholder?: string;
  required?: boolean;
}) {
  return (
    <input
      {...field}
      value={typeof value === "string" ? value : ""}
      placeholder={placeholder}
      required={required}
      onChange={(e) => onChange(e.target.value === "" ? undefined : e.target.value)}
    />
  );
}

/** The gateway's refusal, under the legend of the group of fields it named. */
export function RefusalNote() {
  const refusal = useContext(Refusal);
  return <p className="field-error">{refusal ?? "The gateway refused these fields."}</p>;
}
