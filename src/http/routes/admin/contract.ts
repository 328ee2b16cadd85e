// The admin API's operations, each declared once: method, path, scope, and the zod schemas of
// its query, body and answer. The routes are registered from these declarations (which
// validate their input with them) and the OpenAPI document is made from them (./openapi.ts),
// so the document cannot say other than what the routes do.
import type { FastifyInstance, FastifyReply, FastifyRequest } from "fastify";
import type { z } from "zod";
import type { AdminScope } from "../../../accounts/admin-tokens.ts";
import { parseInput } from "../console/context.ts";
import { type AdminCaller, callerOf } from "./auth.ts";

export type Method = "GET" | "POST" | "PATCH" | "DELETE";

export interface Operation<
  Q extends z.ZodObject = z.ZodObject,
  B extends z.ZodType | undefined = z.ZodType | undefined,
  A extends z.ZodType | undefined = z.ZodType | undefined,
> {
  /** the OpenAPI operationId */
  id: string;
  method: Method;
  /** under /admin/v1, in OpenAPI's form: "/accounts/{id}" */
  path: string;
  /** the OpenAPI tag: the resource */
  tag: string;
  summary: string;
  description?: string;
  /** what the caller needs: `read` for any GET, else the resource's scope (./auth.ts) */
  scope: AdminScope;
  /** strict: an unknown parameter is invalid_request naming it */
  query: Q;
  /** undefined: the operation takes no body */
  body: B;
  /** the status of success */
  status: 200 | 201 | 204;
  /** the JSON answer; undefined for 204 or an answer of another type (`produces`) */
  answer: A;
  /** a success answer that is not JSON: its content types */
  produces?: readonly string[];
  /** failures beyond invalid_request (400), admin_unauthenticated (401) and admin_forbidden (403); a path with {id} also has 404 */
  errors?: readonly (404 | 409)[];
  /**
   * A catalog operation: its body and answer are the kind's entries, whose schemas are the
   * configuration file's (the catalog service validates them), not this API's own.
   */
  catalog?: {
    kind: "providers" | "models" | "plans";
    body?: "entry" | "patch";
    answer?: "entry" | "list";
  };
}

/** An operation, its types kept for the route that implements it. */
export function operation<
  Q extends z.ZodObject,
  B extends z.ZodType | undefined,
  A extends z.ZodType | undefined,
>(op: Operation<Q, B, A>): Operation<Q, B, A> {
  return op;
}

export interface RouteInput<O extends Operation> {
  query: z.output<O["query"]>;
  body: O["body"] extends z.ZodType ? z.output<O["body"]> : undefined;
  /** the path's {id}, as sent: a lookup that finds nothing answers not_found */
  id: string;
  caller: AdminCaller;
  request: FastifyRequest;
  reply: FastifyReply;
}

/**
 * What the handler returns: the answer (the schema's shape); without an answer schema,
 * nothing (204), the reply when it answered itself (a stream), or a catalog entry or list,
 * whose shape is the catalog service's (the configuration's schemas).
 */
export type RouteOutput<O extends Operation> = O["answer"] extends z.ZodType ? z.input<O["answer"]> : unknown;

/** Fastify's form of an OpenAPI path: "/accounts/{id}" -> "/accounts/:id". */
export function fastifyPath(path: string): string {
  return path.replace(/\{(\w+)\}/g, ":$1");
}

/** Registers the route of an operation: its scope for the auth hook, its input validated. */
export function route<O extends Operation>(
  app: FastifyInstance,
  op: O,
  handler: (input: RouteInput<O>) => Promise<RouteOutput<O>>,
): void {
  app.route({
    method: op.method,
    url: fastifyPath(op.path),
    config: { adminScope: op.scope },
    handler: async (request, reply) => {
      const query = parseInput(op.query, request.query, "query") as RouteInput<O>["query"];
      const body = op.body === undefined ? undefined : parseInput(op.body, request.body, "body");
      const id = (request.params as { id?: string }).id ?? "";
      const answer = await handler({
        query,
        body: body as RouteInput<O>["body"],
        id,
        caller: callerOf(request),
        request,
        reply,
      });
      if (answer === reply) return reply;
      if (op.status === 204) return reply.code(204).send();
      return reply.code(op.status).send(answer);
    },
  });
}
