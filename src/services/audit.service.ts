import type { AuditEvent, AuditRepository } from '../repositories/audit.repository.js';
import type { Clock } from '../platform/clock.js';
import { createBatcher } from '../storage/batcher.js';
import type { Tx } from '../storage/db.js';

/**
 * The security audit log: sign-ups, logins and failed logins, tokens created and revoked,
 * clients created and deleted, MFA changes. Each event names the account it concerns, so the
 * owner can read its own (GET /v1/user/security_events). Secrets never go into `details`.
 */
export type AuditType =
  | 'user.signup' | 'user.login' | 'user.login_failed' | 'user.locked_out' | 'user.password_changed' | 'user.username_changed'
  | 'user.profile_changed' | 'user.deleted'
  | 'token.created' | 'token.refreshed' | 'token.revoked' | 'tokens.revoked'
  | 'client.created' | 'client.updated' | 'client.deleted' | 'client.auth_failed'
  | 'mfa.enabled' | 'mfa.disabled' | 'mfa.otp_failed' | 'mfa.recovery_code_used'
  | 'product.created' | 'product.deleted' | 'team.member_added' | 'team.member_removed'
  | 'customer.created' | 'customer.login_failed' | 'customer.password_changed' | 'customer.deleted'
  | 'device.provisioned' | 'device.imported' | 'device.removed' | 'device.claimed' | 'device.unclaimed' | 'claim_code.created'
  | 'config.schema_replaced' | 'config.schema_restored'
  | 'webhook.created' | 'webhook.updated' | 'webhook.deleted' | 'webhook.secret_rotated' | 'webhook.disabled'
  | 'firmware.uploaded' | 'firmware.deleted' | 'firmware.released' | 'firmware.signing_key_set' | 'firmware.signing_key_removed'
  | 'firmware.rollout_started' | 'firmware.rollout_paused' | 'firmware.rollout_resumed' | 'firmware.rollout_aborted' | 'firmware.rollout_advanced' | 'firmware.rollout_completed'
  | 'group.created' | 'group.updated' | 'group.deleted' | 'device.groups_changed';

export interface AuditInput {
  account: { kind: AuditEvent['accountKind']; id: string };
  type: AuditType;
  ip?: string | null | undefined;
  details?: Record<string, unknown>;
}

/** The stored form of an event. */
export function auditEvent(input: AuditInput, at: Date): Omit<AuditEvent, 'id'> {
  return {
    accountKind: input.account.kind,
    accountId: input.account.id,
    type: input.type,
    ip: input.ip ?? null,
    details: input.details ?? {},
    at,
  };
}

export function createAuditService(deps: { repo: AuditRepository; clock: Clock }) {
  // Events share a statement under load, like token inserts (storage/batcher.ts); identical
  // events of one batch become one row with a `count` (audit.repository.ts).
  const batcher = createBatcher<Omit<AuditEvent, 'id'>>((events) => deps.repo.insertMany(events));

  return {
    /**
     * Records an event: batched, or, when it is part of a larger write, in the caller's
     * transaction, so that it is stored with the rest or not at all (a batch is a statement of
     * its own, outside any transaction, and on the embedded store would wait for it to end).
     */
    record(input: AuditInput, tx?: Tx): Promise<void> {
      const event = auditEvent(input, deps.clock.now());
      return tx ? deps.repo.insertMany([event], tx) : batcher.add(event);
    },
    list: (kind: AuditEvent['accountKind'], id: string, page: number, perPage: number) => deps.repo.list(kind, id, perPage, (page - 1) * perPage),
  };
}

export type AuditService = ReturnType<typeof createAuditService>;
