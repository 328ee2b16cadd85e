// Console users in the store: who may log in to the console, for which account, with which
// role. E-mails are stored lower-cased (they are the login name); passwords only as scrypt
// hashes (accounts/password.ts). Nothing caches users: every console request reads its session
// and user from the store, so a change (role, disabled, password) reaches every instance at
// once, without a revision bump. Disabling a user or changing a password ends their sessions.
// A change given an actor is written to the audit log in its own transaction.
import type { Kysely } from "kysely";
import { lockRow } from "../audit/lock.ts";
import { writeAudit } from "../audit/log.ts";
import type { Database } from "../store/schema.ts";
import { isUniqueViolation, LookupError } from "./errors.ts";
import { newId } from "./key-format.ts";
import { hashPassword, passwordProblem } from "./password.ts";
import { ROLES, type Role } from "./roles.ts";

type Db = Kysely<Database>;

export interface User {
  id: string;
  account_id: string;
  email: string;
  role: Role;
  disabled: number;
  created_at: number;
}

/** A user with the stored password hash: only for login. */
export interface UserWithHash extends User {
  password_hash: string;
}

/** Bad input to a user change: which field, and what is wrong with it. */
export class UserInputError extends Error {
  override name = "UserInputError";
  readonly field: string;
  constructor(field: string, message: string) {
    super(message);
    this.field = field;
  }
}

/** A change that clashes with what is stored, e.g. an e-mail that is taken. */
export class ConflictError extends LookupError {
  override name = "ConflictError";
}

const userColumns = ["id", "account_id", "email", "role", "disabled", "created_at"] as const;

/**
 * Ids of the console's own rows (users, tickets, messages): the same random part as every
 * other id, under the row's own type prefix.
 */
export function newConsoleId(kind: "usr" | "tkt" | "msg"): string {
  return kind + newId("req").slice(3);
}

/**
 * The form an e-mail is stored and looked up in: Unicode compatibility form (NFKC, so
 * full-width and other look-alike forms of one address are one address), trimmed,
 * lower-cased.
 */
export function canonicalEmail(email: string): string {
  return email.normalize("NFKC").trim().toLowerCase();
}

/**
 * Control, invisible (format), private-use and lone surrogate characters: a NUL or a
 * zero-width space would make a second user that looks like an existing one.
 */
const HIDDEN = /[\p{Cc}\p{Cf}\p{Co}\p{Cs}]/u;

/** canonicalEmail(); throws UserInputError when it is not an e-mail address. */
export function normaliseEmail(email: string): string {
  const e = canonicalEmail(email);
  // One @, something on each side, no spaces; "admin@localhost" is a valid login name.
  if (e.length > 254 || HIDDEN.test(e) || !/^[^\s@]+@[^\s@]+$/.test(e))
    // JSON-quoted, so a control character shows as an escape, not raw on a terminal
    throw new UserInputError("email", `${JSON.stringify(email.slice(0, 100))} is not an e-mail address`);
  return e;
}

function checkRole(role: string): Role {
  if (!(ROLES as readonly string[]).includes(role))
    throw new UserInputError("role", `role must be one of ${ROLES.join(", ")} (got "${role.slice(0, 50)}")`);
  return role as Role;
}

function checkPassword(password: string): void {
  const problem = passwordProblem(password);
  if (problem) throw new UserInputError("password", `the password ${problem}`);
}

function asUser(row: { role: string } & Omit<User, "role">): User {
  return { ...row, role: row.role as Role };
}

/** A user as the audit log records it: never a password or its hash. */
export function userAudit(u: User) {
  return {
    id: u.id,
    email: u.email,
    account_id: u.account_id,
    role: u.role,
    disabled: Number(u.disabled) === 1,
  };
}

/**
 * Whether a change would lock its own maker out of administration (their admin role removed,
 * or themselves disabled): refused, so a gateway cannot lose its last admin by a slip; another
 * admin can make the change.
 */
export function locksOutSelf(
  actingUserId: string | undefined,
  targetId: string,
  changes: { role?: string | undefined; disabled?: boolean | undefined },
): boolean {
  return (
    actingUserId === targetId &&
    ((changes.role !== undefined && changes.role !== "admin") || changes.disabled === true)
  );
}

export async function createUser(
  db: Db,
  input: { account_id: string; email: string; role?: string; password: string },
  actor?: string,
): Promise<User> {
  const email = normaliseEmail(input.email);
  const role = checkRole(input.role ?? "member");
  checkPassword(input.password);
  const account = await db
    .selectFrom("accounts")
    .select("id")
    .where("id", "=", input.account_id)
    .executeTakeFirst();
  if (!account) throw new LookupError(`no account with id "${input.account_id}"`);
  const user = {
    id: newConsoleId("usr"),
    account_id: input.account_id,
    email,
    role,
    password_hash: await hashPassword(input.password),
    created_at: Date.now(),
  };
  const { password_hash: _, ...rest } = user;
  const created: User = { ...rest, disabled: 0 };
  try {
    await db.transaction().execute(async (trx) => {
      await trx.insertInto("users").values(user).execute();
      if (actor)
        await writeAudit(trx, {
          actor,
          action: "create",
          resource: "users",
          resourceId: user.id,
          after: userAudit(created),
        });
    });
  } catch (err) {
    // the unique index decides, so two concurrent creates of one e-mail cannot both pass
    if (isUniqueViolation(err)) throw new ConflictError(`a user with the e-mail "${email}" exists already`);
    throw err;
  }
  return created;
}

/** The user and its password hash, or undefined; the e-mail is matched case-insensitively. */
export async function findUserByEmail(db: Db, email: string): Promise<UserWithHash | undefined> {
  const row = await db
    .selectFrom("users")
    .select([...userColumns, "password_hash"])
    .where("email", "=", canonicalEmail(email))
    .executeTakeFirst();
  return row && { ...asUser(row), password_hash: row.password_hash };
}

export async function findUserById(db: Db, id: string): Promise<User | undefined> {
  const row = await db.selectFrom("users").select(userColumns).where("id", "=", id).executeTakeFirst();
  return row && asUser(row);
}

export async function listUsers(db: Db, filter: { account_id?: string } = {}): Promise<User[]> {
  let q = db.selectFrom("users").select(userColumns);
  if (filter.account_id !== undefined) q = q.where("account_id", "=", filter.account_id);
  const rows = await q.orderBy("created_at").orderBy("id").execute();
  return rows.map(asUser);
}

/** Changes a user; returns the user as it is now, or undefined when there is no such user. */
export async function updateUser(
  db: Db,
  id: string,
  changes: { role?: string; password?: string; disabled?: boolean },
  actor?: string,
): Promise<User | undefined> {
  const set: { role?: Role; password_hash?: string; disabled?: number } = {};
  if (changes.role !== undefined) set.role = checkRole(changes.role);
  if (changes.password !== undefined) {
    checkPassword(changes.password);
    set.password_hash = await hashPassword(changes.password);
  }
  if (changes.disabled !== undefined) set.disabled = changes.disabled ? 1 : 0;
  if (Object.keys(set).length) {
    const endSessions = set.password_hash !== undefined || set.disabled === 1;
    const found = await db.transaction().execute(async (trx) => {
      if (!(await lockRow(trx, "users", id))) return false;
      const read = () =>
        trx.selectFrom("users").select(userColumns).where("id", "=", id).executeTakeFirstOrThrow();
      const before = asUser(await read());
      await trx.updateTable("users").set(set).where("id", "=", id).execute();
      // A new password or a disabled user ends every session (a stolen cookie dies with it).
      if (endSessions) await trx.deleteFrom("sessions").where("user_id", "=", id).execute();
      if (actor)
        await writeAudit(trx, {
          actor,
          action: "update",
          resource: "users",
          resourceId: id,
          before: userAudit(before),
          // the password itself never: only that it changed
          after: { ...userAudit(asUser(await read())), ...(set.password_hash && { password_changed: true }) },
        });
      return true;
    });
    if (!found) return undefined;
  }
  return findUserById(db, id);
}

/** Sets the password of the user with this e-mail and ends their sessions. */
export async function setPassword(db: Db, email: string, password: string): Promise<User> {
  const user = await findUserByEmail(db, email);
  const missing = () => new LookupError(`no user with the e-mail ${JSON.stringify(canonicalEmail(email))}`);
  if (!user) throw missing();
  const updated = await updateUser(db, user.id, { password });
  if (!updated) throw missing();
  return updated;
}
