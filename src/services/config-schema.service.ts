import { DomainError } from '../domain/errors.js';
import { defaultSchema, schemaVersion } from '../domain/config/default-schema.js';
import { checkSchema, configAjv } from '../domain/config/schema-rules.js';
import type { Clock } from '../platform/clock.js';
import type { ConfigSchemasRepository } from '../repositories/config-schemas.repository.js';
import type { ProductRecord } from '../repositories/products.repository.js';
import type { AccessTokenRecord } from '../repositories/tokens.repository.js';
import type { AuditService } from './audit.service.js';
import { accountOf } from './audit-account.js';

function invalid(description: string, violations: Array<{ path: string; message: string; params?: Record<string, unknown> }>): DomainError {
  return new DomainError('invalid_schema', description, { details: { message: 'Invalid Schema', description, violations } });
}

/**
 * A product's configuration schema (SPEC.md §2.6, §4.5): the default, or a custom one that
 * replaces it whole. A custom schema is checked (schema-rules.ts) before it is stored, and kept as
 * the text of its parsed JSON, so that its key order (the display order) survives.
 */
export function createConfigSchemaService(deps: { repo: ConfigSchemasRepository; audit: AuditService; clock: Clock }) {
  const ajv = configAjv();
  const defaultText = JSON.stringify(defaultSchema());

  return {
    /** The schema in force, as text, and whether it is the default. */
    async current(product: ProductRecord): Promise<{ text: string; custom: boolean }> {
      const stored = await deps.repo.find(product.id);
      return stored ? { text: stored.schemaText, custom: true } : { text: defaultText, custom: false };
    },

    /** PUT /v1/products/:p/config with Content-Type application/schema+json. */
    async replace(product: ProductRecord, body: string, actor: AccessTokenRecord, ip: string): Promise<{ version: number | null }> {
      let parsed: unknown;
      try {
        parsed = JSON.parse(body);
      } catch {
        throw invalid('The body is not JSON', [{ path: '', message: 'The body is not valid JSON' }]);
      }
      const violations = checkSchema(parsed, ajv);
      if (violations.length > 0) throw invalid(`The schema breaks ${violations.length} rule${violations.length === 1 ? '' : 's'}; nothing was changed`, violations);
      const now = deps.clock.now();
      await deps.repo.upsert({ productId: product.id, schemaText: JSON.stringify(parsed), updatedAt: now, updatedBy: actorName(actor) });
      await deps.audit.record({ account: accountOf(actor.subject), type: 'config.schema_replaced', ip, details: { product_id: product.id, version: schemaVersion(parsed as Record<string, unknown>) } });
      return { version: schemaVersion(parsed as Record<string, unknown>) };
    },

    /** DELETE /v1/products/:p/config with Content-Type application/schema+json: back to the default. */
    async restoreDefault(product: ProductRecord, actor: AccessTokenRecord, ip: string): Promise<void> {
      if (!(await deps.repo.delete(product.id))) throw new DomainError('not_found', 'The schema is already the default');
      await deps.audit.record({ account: accountOf(actor.subject), type: 'config.schema_restored', ip, details: { product_id: product.id } });
    },
  };
}

function actorName(auth: AccessTokenRecord): string {
  const s = auth.subject;
  return s.kind === 'user' ? `user:${s.userId}` : s.kind === 'product' ? `product:${s.productId}` : `customer:${s.customerId}`;
}

export type ConfigSchemaService = ReturnType<typeof createConfigSchemaService>;
