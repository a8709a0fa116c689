import type { FastifyInstance } from 'fastify';
import { Type } from '@sinclair/typebox';
import type { AccountService } from '../../services/accounts.service.js';
import type { AuditService } from '../../services/audit.service.js';
import type { MfaService } from '../../services/mfa.service.js';
import { authOf, userIdOf, type Guard } from '../auth.js';
import { pageMeta } from '../../domain/paging.js';
import { Flag, OkBody, Pagination, Str, bodyOptional, errorResponses, flagValue } from '../schemas.js';

const AccountInfo = Type.Record(Type.String(), Type.Union([Type.String({ maxLength: 200 }), Type.Boolean()]), { maxProperties: 20 });

const UserProfile = Type.Object({
  username: Type.String(),
  subscription_ids: Type.Array(Type.String()),
  account_info: AccountInfo,
  scim_provisioned: Type.Boolean(),
  no_password: Type.Boolean(),
  mfa: Type.Object({ enabled: Type.Boolean() }),
  tos: Type.Null(),
  memberships: Type.Array(Type.Unknown()),
  wifi_device_count: Type.Integer(),
  cellular_device_count: Type.Integer(),
  created_at: Type.String(),
});

/** Accounts: sign-up, profile, password and username changes, deletion, MFA, security events. */
export function userRoutes(app: FastifyInstance, deps: { accounts: AccountService; mfa: MfaService; audit: AuditService; guard: Guard }): void {
  const { accounts, mfa, audit, guard } = deps;
  const userOnly = guard({ subjects: ['user'] });

  app.post<{ Body: { username: string; password: string; account_info?: Record<string, string | boolean> } }>('/v1/users', {
    // A sign-up hashes a password (argon2id, about 14 ms of a core): counted with token creation,
    // so that one address cannot keep the server hashing (docs/security.md, "Limits on request volume").
    config: { limit: 'tokens' },
    schema: {
      tags: ['users'],
      summary: 'Sign up (open unless SIGNUP=off)',
      body: Type.Object({
        username: Str(254, { description: 'e-mail address' }),
        password: Str(256, { minLength: 1 }),
        account_info: Type.Optional(AccountInfo),
        utm: Type.Optional(Type.Unknown()),
      }),
      response: { 201: OkBody, ...errorResponses(400, 403, 409) },
    },
  }, async (req, reply) => {
    await accounts.signUp(req.body, req.ip);
    return reply.code(201).send({ ok: true });
  });

  app.get('/v1/user', {
    preHandler: userOnly,
    schema: { tags: ['users'], summary: 'The account of the token', response: { 200: UserProfile, ...errorResponses(400, 401, 403) } },
  }, async (req) => accounts.profile(userIdOf(req)));

  app.put<{ Body: { account_info?: unknown; username?: string; password?: string; current_password?: string; invalidate_tokens?: boolean | 'true' | 'false' } }>('/v1/user', {
    preHandler: userOnly,
    schema: {
      tags: ['users'],
      summary: 'Change profile, username or password',
      description: 'A new username or password needs current_password. A new password revokes every other token of the account.',
      body: Type.Object({
        account_info: Type.Optional(AccountInfo),
        username: Type.Optional(Str(254)),
        password: Type.Optional(Str(256)),
        current_password: Type.Optional(Str(256)),
        invalidate_tokens: Type.Optional(Flag),
        access_token: Type.Optional(Str(200)),
      }),
      response: { 200: OkBody, ...errorResponses(400, 401, 403, 409, 429) },
    },
  }, async (req) => {
    await accounts.update(userIdOf(req), authOf(req).tokenHash, { ...req.body, invalidate_tokens: flagValue(req.body.invalidate_tokens) }, req.ip);
    return { ok: true as const };
  });

  app.delete<{ Body: { password?: string } | undefined }>('/v1/user', {
    preValidation: bodyOptional,
    preHandler: userOnly,
    schema: {
      tags: ['users'],
      summary: 'Delete the account, with its password',
      body: Type.Optional(Type.Object({ password: Type.Optional(Str(256)), access_token: Type.Optional(Str(200)) })),
      response: { 200: OkBody, ...errorResponses(400, 401, 403, 429) },
    },
  }, async (req) => {
    await accounts.remove(userIdOf(req), req.body?.password, req.ip);
    return { ok: true as const };
  });

  app.get('/v1/user/mfa-enable', {
    preHandler: userOnly,
    schema: {
      tags: ['users'],
      summary: 'Start MFA enrolment: a TOTP secret and the mfa_token that confirms it',
      response: {
        200: Type.Object({ mfa_token: Type.String(), secret: Type.String(), otpauth_url: Type.String(), qr_url: Type.String({ description: 'the otpauth:// URI to show as a QR code' }) }),
        ...errorResponses(400, 401, 409),
      },
    },
  }, async (req) => mfa.beginEnrollment(userIdOf(req)));

  app.post<{ Body: { mfa_token: string; otp: string | number; invalidate_tokens?: boolean | 'true' | 'false' } }>('/v1/user/mfa-enable', {
    preHandler: userOnly,
    schema: {
      tags: ['users'],
      summary: 'Confirm MFA enrolment with a first code; answers the recovery codes, once',
      body: Type.Object({
        mfa_token: Str(200),
        otp: Type.Union([Str(20), Type.Integer({ minimum: 0, maximum: 999999 })]),
        invalidate_tokens: Type.Optional(Flag),
        access_token: Type.Optional(Str(200)),
      }),
      response: { 200: Type.Object({ enrolled: Type.Boolean(), recovery_codes: Type.Array(Type.String()) }), ...errorResponses(400, 401) },
    },
  }, async (req) => mfa.confirmEnrollment(userIdOf(req), authOf(req).tokenHash, { ...req.body, invalidate_tokens: flagValue(req.body.invalidate_tokens) }, req.ip));

  app.put<{ Body: { current_password: string } }>('/v1/user/mfa-disable', {
    preHandler: userOnly,
    schema: {
      tags: ['users'],
      summary: 'Turn MFA off, with the current password',
      body: Type.Object({ current_password: Str(256), access_token: Type.Optional(Str(200)) }),
      response: { 200: OkBody, ...errorResponses(400, 401, 403, 409, 429) },
    },
  }, async (req) => {
    await mfa.disable(userIdOf(req), req.body.current_password, req.ip);
    return { ok: true as const };
  });

  app.get<{ Querystring: { page?: number; per_page?: number } }>('/v1/user/security_events', {
    preHandler: userOnly,
    schema: {
      tags: ['users'],
      summary: 'The security audit log of the account, newest first',
      querystring: Type.Intersect([Pagination, Type.Object({ access_token: Type.Optional(Str(200)) })]),
      response: {
        200: Type.Object({
          events: Type.Array(Type.Object({ type: Type.String(), at: Type.String(), ip: Type.Union([Type.String(), Type.Null()]), details: Type.Record(Type.String(), Type.Unknown()) })),
          meta: Type.Object({ page: Type.Integer(), per_page: Type.Integer(), total: Type.Integer(), total_pages: Type.Integer() }),
        }),
        ...errorResponses(400, 401),
      },
    },
  }, async (req) => {
    const page = req.query.page ?? 1;
    const perPage = req.query.per_page ?? 25;
    const { events, total } = await audit.list('user', userIdOf(req), page, perPage);
    return {
      events: events.map((e) => ({ type: e.type, at: e.at.toISOString(), ip: e.ip, details: e.details })),
      meta: pageMeta(page, perPage, total),
    };
  });
}
