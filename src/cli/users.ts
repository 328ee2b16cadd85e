// `users create | set-password | list`: console users. A password not given with --password
// is asked for on a terminal (not echoed, typed twice) or read as one line from stdin, so
// scripts can pipe it in without it showing in the process list or shell history.
import { parseArgs } from "node:util";
import { findAccount } from "../accounts/accounts.ts";
import { passwordProblem } from "../accounts/password.ts";
import { ROLES } from "../accounts/roles.ts";
import { createUser, listUsers, setPassword, type User, UserInputError } from "../accounts/users.ts";
import { type CliContext, print, UsageError } from "./context.ts";

export function userView(u: User) {
  return {
    id: u.id,
    email: u.email,
    role: u.role,
    account_id: u.account_id,
    disabled: u.disabled === 1,
    created_at: new Date(Number(u.created_at)).toISOString(),
  };
}

function human(v: ReturnType<typeof userView>): string {
  return `${v.id}  ${v.email}  ${v.role}  account=${v.account_id}${v.disabled ? "  DISABLED" : ""}`;
}

/** Reads one line from a stream that is not a terminal (a pipe or a file). */
async function readLine(stream: NodeJS.ReadStream): Promise<string> {
  let text = "";
  for await (const chunk of stream) {
    text += typeof chunk === "string" ? chunk : chunk.toString("utf8");
    if (text.includes("\n")) break;
  }
  stream.pause();
  return text.split(/\r?\n/)[0]!;
}

/** Asks on the terminal without echoing what is typed. */
function askHidden(prompt: string): Promise<string> {
  const stdin = process.stdin;
  process.stderr.write(prompt);
  return new Promise((resolve, reject) => {
    let value = "";
    const done = (err?: Error) => {
      stdin.off("data", onData);
      stdin.setRawMode(false);
      stdin.pause();
      process.stderr.write("\n");
      if (err) reject(err);
      else resolve(value);
    };
    const onData = (data: Buffer) => {
      for (const ch of data.toString("utf8")) {
        if (ch === "\r" || ch === "\n" || ch === "\u0004") return done();
        if (ch === "\u0003") return done(new UsageError("cancelled"));
        if (ch === "\u007f" || ch === "\b") value = value.slice(0, -1);
        else value += ch;
      }
    };
    stdin.setRawMode(true);
    stdin.resume();
    stdin.on("data", onData);
  });
}

/** The password from --password, the terminal, or stdin; checked against the rules. */
async function passwordFrom(given: string | undefined): Promise<string> {
  let password = given;
  if (password === undefined) {
    if (process.stdin.isTTY) {
      password = await askHidden("Password: ");
      if ((await askHidden("Repeat the password: ")) !== password)
        throw new UsageError("the two passwords differ");
    } else password = await readLine(process.stdin);
  }
  if (!password)
    throw new UsageError("no password given (use --password, type it, or pipe one line to stdin)");
  const problem = passwordProblem(password);
  if (problem) throw new UsageError(`the password ${problem}`);
  return password;
}

/** Bad e-mails and roles are usage errors (exit 2), like bad flags. */
function usage(err: unknown): never {
  if (err instanceof UserInputError) throw new UsageError(err.message);
  throw err;
}

export async function usersCommand(ctx: CliContext, args: string[]): Promise<void> {
  const [sub, ...rest] = args;
  switch (sub) {
    case "create": {
      const { values } = parseArgs({
        args: rest,
        options: {
          account: { type: "string" },
          email: { type: "string" },
          role: { type: "string" },
          password: { type: "string" },
        },
        strict: true,
      });
      if (!values.account) throw new UsageError("users create needs --account ID|NAME");
      if (!values.email) throw new UsageError("users create needs --email E");
      if (values.role !== undefined && !(ROLES as readonly string[]).includes(values.role))
        throw new UsageError(`--role must be one of ${ROLES.join(", ")}`);
      const db = (await ctx.store()).db;
      const account = await findAccount(db, values.account);
      const password = await passwordFrom(values.password);
      const user = await createUser(db, {
        account_id: account.id,
        email: values.email,
        role: values.role ?? "member",
        password,
      }).catch(usage);
      const v = userView(user);
      return print(ctx, v, () => `created user ${human(v)}`);
    }
    case "set-password": {
      const { values, positionals } = parseArgs({
        args: rest,
        options: { password: { type: "string" } },
        allowPositionals: true,
        strict: true,
      });
      if (positionals.length !== 1) throw new UsageError("users set-password needs the user's e-mail");
      const db = (await ctx.store()).db;
      const password = await passwordFrom(values.password);
      const v = userView(await setPassword(db, positionals[0]!, password).catch(usage));
      return print(ctx, v, () => `password set for ${human(v)}; their sessions were ended`);
    }
    case "list": {
      const { values } = parseArgs({ args: rest, options: { account: { type: "string" } }, strict: true });
      const db = (await ctx.store()).db;
      const accountId = values.account === undefined ? undefined : (await findAccount(db, values.account)).id;
      const views = (await listUsers(db, { account_id: accountId })).map(userView);
      return print(ctx, views, () => (views.length ? views.map(human).join("\n") : "no users"));
    }
    default:
      throw new UsageError(`unknown command "users ${sub ?? ""}" (create, set-password, list)`);
  }
}
