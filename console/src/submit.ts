// One way to send a form or run an action: busy while its request is on its way, the error when
// it fails, and a second submit (a double click, Enter pressed twice) ignored until the first
// is done, so a change is sent once.
import { type FormEvent, useRef, useState } from "react";

export interface Submit<Args extends unknown[] = []> {
  /** the request is on its way: disable what would send it again */
  busy: boolean;
  /** the last run's failure (an ApiError, or an Error the action threw), else null */
  error: unknown;
  /** runs the action, unless a run is still going */
  run: (...args: Args) => void;
  /** a form's onSubmit, for an action without arguments: run() instead of the browser's submission */
  onSubmit: (event: FormEvent) => void;
  clearError: () => void;
}

/**
 * `action` sends the request and reports success itself (close the dialog, reload a list);
 * throwing, e.g. for input it refuses before sending, shows the error.
 */
export function useSubmit<Args extends unknown[] = []>(
  action: (...args: Args) => Promise<void>,
): Submit<Args> {
  // a ref as well as the state: a second event can arrive before React has rendered `busy`
  const running = useRef(false);
  const [busy, setBusy] = useState(false);
  const [error, setError] = useState<unknown>(null);

  function run(...args: Args): void {
    if (running.current) return;
    running.current = true;
    setBusy(true);
    setError(null);
    action(...args)
      .catch((err: unknown) => setError(err))
      .finally(() => {
        running.current = false;
        setBusy(false);
      });
  }

  return {
    busy,
    error,
    run,
    onSubmit(event) {
      event.preventDefault();
      (run as () => void)();
    },
    clearError: () => setError(null),
  };
}
