import { DomainError } from '../../domain/errors.js';
import { narrowScope, parseRequestedScope } from '../../domain/scopes.js';
import type { Subject } from '../../domain/subject.js';
import { lifetimeRequest, type GrantDeps, type GrantHandler, type Issuer } from './grant.js';

/**
 * RFC 6749 §4.4: a registered client's token for its owner (its user, or its product), or, with
 * `scope=customer=<email>` and a product's full-scope (two-legged server) client, a token for
 * one of the product's customers (docs/api.md, "Customers").
 */
export function clientCredentialsGrant(deps: GrantDeps, issuer: Issuer): GrantHandler {
  return async (client, p, ip) => {
    if (client.kind !== 'registered') throw new DomainError('invalid_grant', 'Client credentials are invalid');
    const owner = client.record.owner;
    const requested = parseRequestedScope(p.scope);
    const lifetime = lifetimeRequest(p);
    if (requested.customerEmail !== undefined) {
      if (owner.kind !== 'product') throw new DomainError('invalid_scope', 'customer= needs a client that belongs to a product');
      if (client.record.scope !== null) throw new DomainError('invalid_scope', `The client's scope (${client.record.scope}) does not allow customer tokens`);
      const customer = await deps.customers.findByEmail(owner.id, requested.customerEmail);
      if (!customer) throw new DomainError('invalid_grant', `No customer ${requested.customerEmail.slice(0, 254)} in this product`);
      return issuer.issueFor({ kind: 'customer', customerId: customer.id, productId: owner.id }, client, narrowScope(null, requested.scope), lifetime, ip, 'client_credentials', `customer=${customer.email}`);
    }
    const subject: Subject = owner.kind === 'user' ? { kind: 'user', userId: owner.id } : { kind: 'product', productId: owner.id };
    return issuer.issueFor(subject, client, narrowScope(client.record.scope, requested.scope), lifetime, ip, 'client_credentials');
  };
}
