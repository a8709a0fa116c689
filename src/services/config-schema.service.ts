import { DomainError } from '../domain/errors.js';
import { defaultSchema, schemaVersion } from '../domain/config/default-schema.js';
import { checkSchema, configAjv } from '../domain/config/schema-rules.js';
import type { Clock } from '../platform/clock.js';
import type { ConfigSchemasRepository } from '../repositories/config-schemas.repository.js';
import type { ProductRecord } from '../repositories/products.repository.js';
import type { AccessTokenRecord } from '../repositories/tokens.repository.js';
import type { AuditService } from './audit.service.js';
import type { ChangeInfo } from './config-values.service.js';
import type { ConfigHistoryRepository } from '../repositories/config-history.repository.js';
import type { ConfigValuesRepository } from '../repositories/config-values.repository.js';
import type { Db } from '../storage/db.js';
import { accountOf } from './audit-account.js';

function invalid(description: string, violations: Array<{ path: string; message: string; params?: Record<string, unknown> }>): DomainError {
  return new DomainError('invalid_schema', description, { details: { message: 'Invalid Schema', description, violations } });
}

/**
 * A product's configuration schema (SPEC.md §2.6, §4.5): the default, or a custom one that
 * replaces it whole. A custom schema is checked (schema-rules.ts) before it is stored, and kept as
 * the text of its parsed JSON, so that its key order (the display order) survives.
 */
export function createConfigSchemaService(deps: {
  db: Db; repo: ConfigSchemasRepository; history: ConfigHistoryRepository; values: ConfigValuesRepository; audit: AuditService; clock: Clock;
}) {
  const ajv = configAjv();
  const defaultText = JSON.stringify(defaultSchema());

  /** Checks a schema body; answers it parsed, or throws 422 with the violations. */
  function parse(body: string): Record<string, unknown> {
    let parsed: unknown;
    try {
      parsed = JSON.parse(body);
    } catch {
      throw invalid('The body is not JSON', [{ path: '', message: 'The body is not valid JSON' }]);
    }
    const violations = checkSchema(parsed, ajv);
    if (violations.length > 0) throw invalid(`The schema breaks ${violations.length} rule${violations.length === 1 ? '' : 's'}; nothing was changed`, violations);
    return parsed as Record<string, unknown>;
  }

  /**
   * Modules with stored values that `schema` does not have: they are kept aside, not destroyed,
   * and come back if a later schema has the module again.
   */
  async function keptAside(product: ProductRecord, schema: Record<string, unknown>): Promise<string[]> {
    const props = (schema.properties ?? {}) as Record<string, unknown>;
    return (await deps.values.storedModules(product.id)).filter((m) => !(m in props));
  }

  async function store(product: ProductRecord, text: string | null, change: ChangeInfo): Promise<{ version: number; existed: boolean }> {
    return deps.db.transaction(async (tx) => {
      await deps.values.lockProduct(product.id, tx);
      let existed = true;
      if (text === null) existed = await deps.repo.delete(product.id, tx);
      else await deps.repo.upsert({ productId: product.id, schemaText: text, updatedAt: deps.clock.now(), updatedBy: `${change.actor.kind}:${change.actor.id}` }, tx);
      if (!existed) return { version: 0, existed };
      const version = await deps.history.append(tx, {
        productId: product.id, kind: 'schema', deviceId: null, document: text,
        action: change.rolledBackFrom !== undefined ? 'rollback' : text === null ? 'reset' : 'write',
        rolledBackFrom: change.rolledBackFrom ?? null, actor: change.actor, createdAt: deps.clock.now(),
      });
      return { version, existed };
    });
  }

  return {
    /** The schema in force, as text, and whether it is the default. */
    async current(product: ProductRecord): Promise<{ text: string; custom: boolean }> {
      const stored = await deps.repo.find(product.id);
      return stored ? { text: stored.schemaText, custom: true } : { text: defaultText, custom: false };
    },

    /** PUT /v1/products/:p/config with Content-Type application/schema+json. */
    async replace(product: ProductRecord, body: string, actor: AccessTokenRecord, ip: string, options: { rolledBackFrom?: number } = {}) {
      const parsed = parse(body);
      const { version: history } = await store(product, JSON.stringify(parsed), { actor: accountOf(actor.subject), ...options });
      await deps.audit.record({ account: accountOf(actor.subject), type: 'config.schema_replaced', ip, details: { product_id: product.id, version: schemaVersion(parsed) } });
      return { version: schemaVersion(parsed), history_version: history, kept_aside: await keptAside(product, parsed) };
    },

    /** A schema checked, and the stored values it would set aside, without storing it. */
    async preview(product: ProductRecord, body: string) {
      const parsed = parse(body);
      return { dry_run: true as const, version: schemaVersion(parsed), kept_aside: await keptAside(product, parsed) };
    },

    /** DELETE /v1/products/:p/config with Content-Type application/schema+json: back to the default. */
    async restoreDefault(product: ProductRecord, actor: AccessTokenRecord, ip: string, options: { rolledBackFrom?: number } = {}) {
      const { version, existed } = await store(product, null, { actor: accountOf(actor.subject), ...options });
      if (!existed) throw new DomainError('not_found', 'The schema is already the default');
      await deps.audit.record({ account: accountOf(actor.subject), type: 'config.schema_restored', ip, details: { product_id: product.id } });
      return { history_version: version, kept_aside: await keptAside(product, defaultSchema()) };
    },
  };
}

export type ConfigSchemaService = ReturnType<typeof createConfigSchemaService>;
