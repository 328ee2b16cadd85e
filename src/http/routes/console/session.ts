// Login, logout and "who am I". Login attempts are throttled per e-mail and client address,
// per address and per e-mail, in the store (auth/login-limiter.ts); a refused login says the
// same whether the e-mail exists or not, and takes as long.
import type { FastifyInstance } from "fastify";
import { z } from "zod";
import { PASSWORD_MAX_LENGTH, verifyPassword } from "../../../accounts/password.ts";
import { canonicalEmail, findUserByEmail } from "../../../accounts/users.ts";
import { LoginLimiter } from "../../../auth/login-limiter.ts";
import {
  createSession,
  deleteSession,
  readCookie,
  SESSION_COOKIE,
  sessionCookie,
} from "../../../auth/sessions.ts";
import { GatewayError } from "../../../errors/index.ts";
import type { MeAnswer, UserAnswer } from "../../../views/console.ts";
import type { GatewayDeps } from "../../deps.ts";
import { accountFor, accountView, overTls, parseInput, userOf, userView } from "./context.ts";

const loginBody = z
  .object({
    email: z.string().min(1).max(320),
    password: z.string().min(1).max(PASSWORD_MAX_LENGTH),
  })
  .strict();

export async function sessionRoutes(app: FastifyInstance, deps: GatewayDeps): Promise<void> {
  // Its counters are in the store: every instance counts every attempt.
  const limiter = new LoginLimiter(deps.store.db, deps.store.dialect);

  app.post("/login", async (request, reply): Promise<UserAnswer> => {
    const body = parseInput(loginBody, request.body, "body");
    const email = canonicalEmail(body.email);
    const address = request.ip;
    // counted before the password is checked, so concurrent attempts cannot outrun the limit
    const attempt = await limiter.attempt(email, address);
    if (attempt.retryAfterMs > 0)
      throw new GatewayError("login_rate_limited", {
        headers: { "retry-after": String(Math.ceil(attempt.retryAfterMs / 1000)) },
      });
    const user = await findUserByEmail(deps.store.db, email);
    // always one scrypt derivation, against a dummy hash when the e-mail is unknown
    const matches = await verifyPassword(body.password, user?.password_hash ?? null);
    if (!user || !matches || user.disabled) {
      await limiter.failed(email, address);
      throw new GatewayError("invalid_credentials");
    }
    await limiter.succeed(email, address);
    const { token } = await createSession(deps.store.db, user.id);
    reply.header("set-cookie", sessionCookie(token, overTls(request)));
    const { password_hash: _, ...rest } = user;
    return { user: userView(rest) };
  });

  app.post("/logout", async (request, reply) => {
    const token = readCookie(request.headers.cookie, SESSION_COOKIE);
    if (token) await deleteSession(deps.store.db, token);
    reply.header("set-cookie", sessionCookie(null, overTls(request)));
    return reply.code(204).send();
  });

  app.get("/me", async (request): Promise<MeAnswer> => {
    parseInput(z.object({}).strict(), request.query, "query");
    const user = userOf(request);
    const account = await accountFor(deps, user, undefined);
    return { user: userView(user), account: accountView(deps, account) };
  });
}
