import { queryOptions } from '@tanstack/react-query';
import { api } from '../../../lib/api-client.js';
import type { Session } from '../../../lib/session.js';

/** The account's query keys: the user, the access tokens and the security log (all pages, or one). */
export const accountKeys = {
  user: ['user'] as const,
  tokens: ['access-tokens'] as const,
  tokensPage: (page: number) => ['access-tokens', page] as const,
  securityLog: ['security-events'] as const,
  securityLogPage: (page: number) => ['security-events', page] as const,
};

export const PER_PAGE = 10;

export const userQuery = (session: Session) => queryOptions({
  queryKey: accountKeys.user,
  queryFn: () => api(session.token).GET('/v1/user'),
});

export const accessTokensQuery = (session: Session, page: number) => queryOptions({
  queryKey: accountKeys.tokensPage(page),
  queryFn: () => api(session.token).GET('/v1/user/access_tokens', { params: { query: { page, per_page: PER_PAGE } } }),
});

export const securityLogQuery = (session: Session, page: number) => queryOptions({
  queryKey: accountKeys.securityLogPage(page),
  queryFn: () => api(session.token).GET('/v1/user/security_events', { params: { query: { page, per_page: PER_PAGE } } }),
});
