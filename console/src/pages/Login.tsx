import { useEffect, useId, useRef, useState } from "react";
import { api } from "../api.ts";
import { ErrorNotice } from "../components/Notice.tsx";
import { useSubmit } from "../submit.ts";

export function LoginPage({ expired, onSignedIn }: { expired: boolean; onSignedIn: () => Promise<void> }) {
  const [email, setEmail] = useState("");
  const [password, setPassword] = useState("");
  const emailId = useId();
  const passwordId = useId();
  const emailRef = useRef<HTMLInputElement>(null);

  useEffect(() => {
    document.title = "Sign in · Console";
    emailRef.current?.focus();
  }, []);

  const submit = useSubmit(async () => {
    await api("/login", { method: "POST", body: { email: email.trim(), password } });
    await onSignedIn();
  });

  return (
    <main className="login-page">
      <form className="card login-card" onSubmit={submit.onSubmit} aria-labelledby="login-title">
        <div className="brand brand-static">
          <span className="brand-mark" aria-hidden="true" />
          Gateway console
        </div>
        <h1 id="login-title">Sign in</h1>
        {expired && (
          <p className="notice notice-info" role="status">
            Your session has ended. Sign in again to continue.
          </p>
        )}
        <ErrorNotice error={submit.error} />
        <div className="field">
          <label htmlFor={emailId}>E-mail</label>
          <input
            ref={emailRef}
            id={emailId}
            type="email"
            name="email"
            autoComplete="username"
            required
            value={email}
            onChange={(e) => setEmail(e.target.value)}
          />
        </div>
        <div className="field">
          <label htmlFor={passwordId}>Password</label>
          <input
            id={passwordId}
            type="password"
            name="password"
            autoComplete="current-password"
            required
            value={password}
            onChange={(e) => setPassword(e.target.value)}
          />
        </div>
        <button type="submit" className="btn btn-primary btn-block" disabled={submit.busy}>
          {submit.busy ? "Signing in…" : "Sign in"}
        </button>
        <p className="muted small">
          This console uses its own sign-in; API keys (<code>sk-…</code>) do not open it. Ask your account's
          owner or the gateway's operator for access.
        </p>
      </form>
    </main>
  );
}
