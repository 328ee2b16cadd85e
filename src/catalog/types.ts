// The catalog: the providers, models and plans a gateway serves, as the configuration file
// declares them (the same fields, one vocabulary for the file, the admin API and the
// console). Where it lives is the operator's choice (`catalog.source`): the file, applied at
// start and on reload, with the store holding a read-only copy for the console and the API;
// or the store, seeded from the file once and edited through the admin API and the console.

export const CATALOG_KINDS = ["providers", "models", "plans"] as const;
export type CatalogKind = (typeof CATALOG_KINDS)[number];

/** An entry as the file or the API writes it: its fields, `id` among them. */
export type CatalogEntry = Record<string, unknown> & { id: string };

/** Who made a change, for the audit log: "token:<id>", "user:<e-mail>" or "cli". */
export type Actor = string;

export interface CatalogState {
  source: "file" | "store";
  /** the store's catalog revision, which every instance follows; null: the file is the source */
  revision: number | null;
}

export interface CatalogService {
  readonly source: "file" | "store";
  state(): Promise<CatalogState>;
  /** The kind's entries in order, secrets masked (an upstream key shows as its last four characters). */
  list(kind: CatalogKind): Promise<CatalogEntry[]>;
  get(kind: CatalogKind, id: string): Promise<CatalogEntry | undefined>;
  /**
   * Adds an entry. Throws GatewayError: `catalog_read_only` when the file is the source,
   * `conflict` when the id exists, `invalid_request` naming the field (`param`) when
   * the catalog it would make is not valid (the same checks as the file's).
   */
  create(kind: CatalogKind, entry: CatalogEntry, actor: Actor): Promise<CatalogEntry>;
  /**
   * Changes the given top-level fields (null removes a field, back to its default); a
   * provider's secrets not given are kept. Same errors, and `not_found`.
   */
  update(kind: CatalogKind, id: string, patch: Record<string, unknown>, actor: Actor): Promise<CatalogEntry>;
  /** Removes an entry; refused (`invalid_request`) while a model or plan still refers to it. */
  remove(kind: CatalogKind, id: string, actor: Actor): Promise<void>;
}
