// A modal built on <dialog>: showModal() makes the rest of the page inert (focus stays inside),
// Escape closes it, and focus goes back to what opened it, also when the dialog is unmounted
// while open.
import { type ReactNode, useEffect, useId, useRef } from "react";

interface DialogProps {
  open: boolean;
  title: string;
  onClose: () => void;
  children: ReactNode;
  /** a short line under the title */
  description?: ReactNode;
  wide?: boolean;
}

export function Dialog({ open, title, onClose, children, description, wide }: DialogProps) {
  const ref = useRef<HTMLDialogElement>(null);
  const titleId = useId();
  const opener = useRef<HTMLElement | null>(null);
  const closeRef = useRef(onClose);
  closeRef.current = onClose;

  useEffect(() => {
    const dialog = ref.current;
    if (!dialog) return;
    if (open && !dialog.open) {
      opener.current = document.activeElement as HTMLElement | null;
      dialog.showModal();
      // the marked element, else the first field, else the close button at the top (a button
      // further down would scroll a long dialog past its title)
      const first =
        dialog.querySelector<HTMLElement>("[data-autofocus]") ??
        dialog.querySelector<HTMLElement>("input:not([type=hidden]):not([disabled]), select, textarea") ??
        dialog.querySelector<HTMLElement>(".dialog-x");
      first?.focus();
    } else if (!open && dialog.open) {
      dialog.close();
    }
  }, [open]);

  // when it closes (Escape, a button, unmount): hand focus back to the opener
  useEffect(() => {
    const dialog = ref.current;
    if (!dialog) return;
    const cancel = (event: Event) => {
      event.preventDefault(); // React state decides; Escape asks to close
      closeRef.current();
    };
    const closed = () => {
      const back = opener.current;
      opener.current = null;
      if (back?.isConnected) back.focus();
    };
    dialog.addEventListener("cancel", cancel);
    dialog.addEventListener("close", closed);
    return () => {
      dialog.removeEventListener("cancel", cancel);
      dialog.removeEventListener("close", closed);
      // taken out of the page while open (a form's dialog goes away with its form): no close
      // event comes, so focus goes back from here
      if (!dialog.isConnected) closed();
    };
  }, []);

  return (
    <dialog ref={ref} className={wide ? "dialog dialog-wide" : "dialog"} aria-labelledby={titleId}>
      {open && (
        <div className="dialog-body">
          <div className="dialog-head">
            <h2 id={titleId}>{title}</h2>
            <button type="button" className="dialog-x" aria-label="Close" onClick={onClose}>
              ×
            </button>
          </div>
          {description && <p className="muted">{description}</p>}
          {children}
        </div>
      )}
    </dialog>
  );
}
