// Who is signed in, and what they may do. The server enforces roles; the app only hides what
// a role cannot use, so members do not meet buttons that would be refused.
import { createContext, useContext } from "react";
import type { AccountView, MeAnswer } from "./types.ts";

export interface Session {
  me: MeAnswer;
  /** an admin looking at another account's pages; null: the user's own account */
  acting: AccountView | null;
  /** the account the account pages show */
  account: AccountView;
  /** may create, change and delete keys and close tickets */
  canManage: boolean;
  isAdmin: boolean;
  refresh: () => Promise<void>;
  logout: () => Promise<void>;
  actAs: (account: AccountView | null) => void;
}

export const SessionContext = createContext<Session | null>(null);

export function useSession(): Session {
  const session = useContext(SessionContext);
  if (!session) throw new Error("useSession outside of a signed-in page");
  return session;
}
