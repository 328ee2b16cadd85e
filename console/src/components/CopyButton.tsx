import { useState } from "react";

/** Copies `text`; where the clipboard API is refused, selects the field so Ctrl+C works. */
export function CopyButton({
  text,
  fieldId,
  label = "Copy",
}: {
  text: string;
  fieldId?: string;
  label?: string;
}) {
  const [state, setState] = useState<"idle" | "copied" | "manual">("idle");
  async function copy() {
    try {
      await navigator.clipboard.writeText(text);
      setState("copied");
    } catch {
      const field = fieldId ? (document.getElementById(fieldId) as HTMLInputElement | null) : null;
      field?.focus();
      field?.select();
      setState("manual");
    }
  }
  return (
    <>
      <button type="button" className="btn" onClick={copy}>
        {state === "copied" ? "Copied" : label}
      </button>
      <span className="sr-status" role="status">
        {state === "copied"
          ? "Copied to the clipboard."
          : state === "manual"
            ? "Selected: press Ctrl+C to copy."
            : ""}
      </span>
    </>
  );
}
