import type { ReactNode } from "react";

/** The page's title (focused after navigation, so screen readers announce the new page). */
export function PageHeader({
  title,
  children,
  actions,
}: {
  title: string;
  children?: ReactNode;
  actions?: ReactNode;
}) {
  return (
    <header className="page-header">
      <div>
        <h1 id="page-title" tabIndex={-1}>
          {title}
        </h1>
        {children && <div className="page-intro">{children}</div>}
      </div>
      {actions && <div className="page-actions">{actions}</div>}
    </header>
  );
}
