import type { ReactNode } from "react";
import { ApiError, errorMessage } from "../api.ts";

/** A failed call: the envelope's message, its code for support, and the field it names. */
export function ErrorNotice({ error, onRetry }: { error: unknown; onRetry?: () => void }) {
  if (!error) return null;
  const code = error instanceof ApiError ? error.code : null;
  const param = error instanceof ApiError ? error.param : null;
  return (
    <div className="notice notice-error" role="alert">
      <p>
        {errorMessage(error)}
        {code && (
          <span className="code-hint">
            {" "}
            ({code}
            {param && (
              <>
                , field <span data-param>{param}</span>
              </>
            )}
            )
          </span>
        )}
      </p>
      {onRetry && (
        <button type="button" className="btn btn-small" onClick={onRetry}>
          Retry
        </button>
      )}
    </div>
  );
}

export function Empty({ title, children }: { title: string; children?: ReactNode }) {
  return (
    <div className="empty">
      <p className="empty-title">{title}</p>
      {children && <div className="muted">{children}</div>}
    </div>
  );
}

export function Loading({ what = "Loading" }: { what?: string }) {
  return (
    <p className="loading" role="status">
      {what}…
    </p>
  );
}

/** A polite live region for results of actions ("Key created"). */
export function Status({ children }: { children: ReactNode }) {
  return (
    <p className="status-line" role="status">
      {children}
    </p>
  );
}
