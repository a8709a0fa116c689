import { DomainError } from '../../domain/errors.js';
import { narrowScope, parseRequestedScope } from '../../domain/scopes.js';
import { clientScope, lifetimeRequest, type GrantDeps, type GrantHandler, type Issuer } from './grant.js';

/**
 * RFC 6749 §4.3. A product client logs in one of the product's customers (simple
 * authentication, docs/api.md "Customers"); any other client logs in a user, who may have to
 * finish with a second factor (`urn:custom:mfa-otp`).
 */
export function passwordGrant(deps: GrantDeps, issuer: Issuer): GrantHandler {
  const { accounts, mfa, audit } = deps;
  return async (client, p, ip) => {
    if (!p.username || !p.password) throw new DomainError('invalid_client', 'Missing parameters. "username" and "password" are required');
    const requested = parseRequestedScope(p.scope);
    if (requested.customerEmail !== undefined) throw new DomainError('invalid_scope', 'customer= is for the client_credentials grant');
    const lifetime = lifetimeRequest(p);

    // The client's customers:create scope limits the app's own credentials, not the customer:
    // the customer's token must reach the customer's devices.
    if (client.kind === 'registered' && client.record.owner.kind === 'product') {
      const productId = client.record.owner.id;
      const customer = await deps.customers.verifyPassword(productId, p.username, p.password, ip);
      if (!customer) throw new DomainError('invalid_grant', 'User credentials are invalid');
      return issuer.issueFor({ kind: 'customer', customerId: customer.id, productId }, client, narrowScope(null, requested.scope), lifetime, ip, 'password');
    }
    const scope = narrowScope(clientScope(client), requested.scope);

    const user = await accounts.verifyPassword(p.username, p.password, ip);
    // A user's own client logs in only its owner; Particle's public clients log in anybody.
    if (client.kind === 'registered' && client.record.owner.id !== user.id) {
      throw new DomainError('unauthorized_client', 'This client may log in only the account that owns it');
    }
    // Validate the lifetime before asking for a second factor, so that the OTP step cannot fail on it.
    issuer.lifetimeOf(lifetime);
    if (user.mfaSecret !== null) {
      const request: Record<string, string> = {};
      if (p.expires_in !== undefined) request.expiresIn = p.expires_in;
      if (p.expires_at !== undefined) request.expiresAt = p.expires_at;
      if (p.scope !== undefined) request.scope = p.scope;
      const mfaToken = await mfa.openLogin(user, client.id, request);
      throw new DomainError('mfa_required', 'Multi-factor authentication required', { details: { mfa_token: mfaToken } });
    }
    await audit.record({ account: { kind: 'user', id: user.id }, type: 'user.login', ip, details: { client_id: client.id } });
    return issuer.issueFor({ kind: 'user', userId: user.id }, client, scope, lifetime, ip, 'password');
  };
}
