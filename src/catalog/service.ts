// The catalog service the admin API and the console's operator pages use: reads with secrets
// masked; changes (store-managed catalogs only) applied whole or not at all, in one
// transaction with their audit entry, and then on this instance at once (the others follow
// the revision within a poll).
import type { Kysely } from "kysely";
import { writeAudit } from "../audit/log.ts";
import type { Config } from "../config/schema.ts";
import { GatewayError } from "../errors/index.ts";
import type { Database } from "../store/schema.ts";
import { type CatalogIssue, catalogOf, issueParam } from "./compose.ts";
import {
  type CatalogData,
  CatalogSecretsError,
  lockCatalog,
  readCatalog,
  readCatalogRevision,
  writeCatalog,
} from "./entries.ts";
import type { SecretBox } from "./secret-box.ts";
import { maskEntry, unmaskPatch } from "./secrets.ts";
import type { Actor, CatalogEntry, CatalogKind, CatalogService, CatalogState } from "./types.ts";

/** What a change must pass before it is written: the issues of the configuration it would make (none: valid). */
export type CatalogValidator = (data: CatalogData) => CatalogIssue[] | Promise<CatalogIssue[]>;

function isRecord(value: unknown): value is Record<string, unknown> {
  return typeof value === "object" && value !== null && !Array.isArray(value);
}

function badInput(message: string, param: string | null = null): GatewayError {
  return new GatewayError("invalid_request", { message, param });
}

/** A file-managed catalog: this instance's file as it runs, read-only. */
export class FileCatalog implements CatalogService {
  readonly source = "file" as const;
  readonly #config: () => Config;

  constructor(config: () => Config) {
    this.#config = config;
  }

  async state(): Promise<CatalogState> {
    return { source: this.source, revision: null };
  }

  async list(kind: CatalogKind): Promise<CatalogEntry[]> {
    return catalogOf(this.#config())[kind].map((e) => maskEntry(kind, e));
  }

  async get(kind: CatalogKind, id: string): Promise<CatalogEntry | undefined> {
    return (await this.list(kind)).find((e) => e.id === id);
  }

  async create(): Promise<CatalogEntry> {
    throw new GatewayError("catalog_read_only");
  }

  async update(): Promise<CatalogEntry> {
    throw new GatewayError("catalog_read_only");
  }

  async remove(): Promise<void> {
    throw new GatewayError("catalog_read_only");
  }
}

export interface StoreCatalogDeps {
  db: Kysely<Database>;
  box: SecretBox | undefined;
  validate: CatalogValidator;
  /** applies the store's newest catalog on this instance (after a change it made) */
  applyNow(): Promise<void>;
}

/** A store-managed catalog, edited through the admin API and the console. */
export class StoreCatalog implements CatalogService {
  readonly source = "store" as const;
  readonly #deps: StoreCatalogDeps;

  constructor(deps: StoreCatalogDeps) {
    this.#deps = deps;
  }

  async state(): Promise<CatalogState> {
    return { source: this.source, revision: (await readCatalogRevision(this.#deps.db)) ?? 0 };
  }

  async list(kind: CatalogKind): Promise<CatalogEntry[]> {
    const data = await readCatalog(this.#deps.db, this.#deps.box);
    return data[kind].map((e) => maskEntry(kind, e));
  }

  async get(kind: CatalogKind, id: string): Promise<CatalogEntry | undefined> {
    return (await this.list(kind)).find((e) => e.id === id);
  }

  async create(kind: CatalogKind, entry: CatalogEntry, actor: Actor): Promise<CatalogEntry> {
    if (!isRecord(entry)) throw badInput("The body must be a JSON object of the entry's fields.");
    if (typeof entry.id !== "string" || !entry.id) throw badInput("Missing required parameter: 'id'.", "id");
    return this.#change(kind, entry.id, actor, "create", (list) => {
      if (list.some((e) => e.id === entry.id))
        throw new GatewayError("conflict", {
          message: `The ${kind} entry "${entry.id}" exists.`,
          param: "id",
        });
      return { list: [...list, entry], after: entry };
    });
  }

  async update(
    kind: CatalogKind,
    id: string,
    patch: Record<string, unknown>,
    actor: Actor,
  ): Promise<CatalogEntry> {
    if (!isRecord(patch)) throw badInput("The body must be a JSON object of the fields to change.");
    if ("id" in patch && patch.id !== id)
      throw badInput("An entry's id cannot be changed: create the new one and delete this one.", "id");
    return this.#change(kind, id, actor, "update", (list) => {
      const at = list.findIndex((e) => e.id === id);
      const current = list[at];
      if (!current) throw new GatewayError("not_found", { message: `No ${kind} entry "${id}".` });
      const next: CatalogEntry = { ...current };
      for (const [field, value] of Object.entries(unmaskPatch(current, patch)))
        if (value === null) delete next[field];
        else next[field] = value;
      const changed = [...list];
      changed[at] = next;
      return { list: changed, before: current, after: next };
    });
  }

  async remove(kind: CatalogKind, id: string, actor: Actor): Promise<void> {
    await this.#change(kind, id, actor, "delete", (list) => {
      const current = list.find((e) => e.id === id);
      if (!current) throw new GatewayError("not_found", { message: `No ${kind} entry "${id}".` });
      return { list: list.filter((e) => e !== current), before: current };
    });
  }

  async #change(
    kind: CatalogKind,
    id: string,
    actor: Actor,
    action: string,
    edit: (list: CatalogEntry[]) => { list: CatalogEntry[]; before?: CatalogEntry; after?: CatalogEntry },
  ): Promise<CatalogEntry> {
    const { db, box, validate } = this.#deps;
    const after = await db
      .transaction()
      .execute(async (trx) => {
        if ((await lockCatalog(trx)) === undefined)
          throw new Error("the store holds no catalog: the gateway seeds it at start");
        const data = await readCatalog(trx, box);
        const result = edit(data[kind]);
        const next: CatalogData = { ...data, [kind]: result.list };
        const issues = await validate(next);
        if (issues.length) {
          const param = issueParam(issues[0]!, next, kind, id);
          const more = issues.length > 1 ? ` (and ${issues.length - 1} more)` : "";
          throw badInput(`Invalid parameter '${param}': ${issues[0]!.message}${more}.`, param);
        }
        await writeCatalog(trx, { [kind]: result.list }, box);
        await writeAudit(trx, {
          actor,
          action,
          resource: kind,
          resourceId: id,
          before: result.before && maskEntry(kind, result.before),
          after: result.after && maskEntry(kind, result.after),
        });
        return result.after;
      })
      .catch((err) => {
        if (err instanceof CatalogSecretsError) throw badInput(err.message, "api_keys");
        throw err;
      });
    await this.#deps.applyNow();
    return after ? maskEntry(kind, after) : ({ id } as CatalogEntry);
  }
}
