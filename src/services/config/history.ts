import { DomainError } from '../../domain/errors.js';
import { diffJson } from '../../domain/config/diff.js';
import { defaultSchema } from '../../domain/config/default-schema.js';
import { pageMeta } from '../../domain/paging.js';
import type { ConfigHistoryRepository, HistoryEntry, HistoryKind } from '../../repositories/config-history.repository.js';
import type { DiffView, HistoryDocumentView, HistoryEntryView } from '../../domain/config/views.js';
import type { ProductRecord } from '../../repositories/products.repository.js';

/** The username of an account by its id (undefined when the account is gone). */
export type UserNames = (id: string) => Promise<string | undefined>;

/** One change as the API shows it; a user author with its username, so that people read who. */
async function view(e: HistoryEntry, names?: UserNames): Promise<HistoryEntryView> {
  const username = e.actor.kind === 'user' && names ? await names(e.actor.id) : undefined;
  return {
    version: e.version, kind: e.kind, device_id: e.deviceId, action: e.action, rolled_back_from: e.rolledBackFrom,
    by: username === undefined ? e.actor : { ...e.actor, username }, at: e.createdAt.toISOString(),
  };
}

/** The document a change left in force: values as JSON; a schema, with null meaning the default. */
export function documentOf(e: HistoryEntry): Record<string, unknown> {
  if (e.document === null) return defaultSchema();
  return JSON.parse(e.document) as Record<string, unknown>;
}

/**
 * The configuration history of a product: every schema change and every write of fleet or device
 * values, with who and when; the difference between two versions of one scope. Rolling back is
 * a write like any other (writes.ts), recorded with the version it restored.
 */
export function createConfigHistoryService(deps: { repo: ConfigHistoryRepository; userNames?: UserNames }) {
  async function find(product: ProductRecord, version: number): Promise<HistoryEntry> {
    const e = await deps.repo.find(product.id, version);
    if (!e) throw new DomainError('not_found', `The product has no configuration version ${version}`);
    return e;
  }

  return {
    find,

    async list(product: ProductRecord, q: { kind?: HistoryKind; deviceId?: string; fleet?: boolean; page: number; perPage: number }) {
      const { entries, total } = await deps.repo.list(product.id, { kind: q.kind, deviceId: q.fleet ? null : q.deviceId }, q.page, q.perPage);
      return { history: await Promise.all(entries.map((e) => view(e, deps.userNames))), meta: pageMeta(q.page, q.perPage, total) };
    },

    async get(product: ProductRecord, version: number): Promise<HistoryDocumentView> {
      const e = await find(product, version);
      return { ...(await view(e, deps.userNames)), document: documentOf(e) };
    },

    /**
     * What `version` changed: against `against` when given (a version of the same scope), else
     * against the change before it in its scope (or, for the first, the defaults: no values, or
     * the default schema).
     */
    async diff(product: ProductRecord, version: number, against?: number): Promise<DiffView> {
      const to = await find(product, version);
      const from = against === undefined ? await deps.repo.previous(to) : await find(product, against);
      if (from && (from.kind !== to.kind || from.deviceId !== to.deviceId)) {
        throw new DomainError('invalid_request', `Versions ${from.version} and ${to.version} are of different scopes (${from.kind} ${from.deviceId ?? 'fleet'}, ${to.kind} ${to.deviceId ?? 'fleet'}); compare versions of one scope`);
      }
      const base = from ? documentOf(from) : to.kind === 'schema' ? defaultSchema() : {};
      return { from: from?.version ?? null, to: to.version, kind: to.kind, device_id: to.deviceId, changes: diffJson(base, documentOf(to)) };
    },
  };
}

export type ConfigHistoryService = ReturnType<typeof createConfigHistoryService>;
