import { DomainError } from '../domain/errors.js';
import { validateEmail, validateNewPassword } from '../domain/accounts.js';
import type { FailureLimiter } from '../domain/failure-limiter.js';
import { resolveLifetime } from '../domain/token-lifetime.js';
import { pageMeta } from '../domain/paging.js';
import type { Clock } from '../platform/clock.js';
import type { Secrets } from '../platform/secrets.js';
import type { Settings } from '../config/settings.js';
import type { Subject } from '../domain/subject.js';
import type { CustomerRecord, CustomersRepository } from '../repositories/customers.repository.js';
import type { ProductRecord } from '../repositories/products.repository.js';
import type { DevicesRepository } from '../repositories/devices.repository.js';
import type { ClaimsRepository } from '../repositories/claims.repository.js';
import type { Db, Tx } from '../storage/db.js';
import type { AuditService } from './audit.service.js';
import type { AuthenticatedClient } from './clients.service.js';
import type { CustomerDirectory } from './customer-directory.js';
import type { TokenResponse, TokenService } from './tokens.service.js';

/** A customer as the team sees it (GET /v1/products/:p/customers). */
export interface CustomerView { id: string; username: string; shadow: boolean; created_at: string; devices: string[] }

export interface NewCustomerBody {
  email?: unknown;
  password?: unknown;
  no_password?: unknown;
}

/**
 * Product customers (docs/particle-compatibility.md#customers): created by the product's client
 * with client credentials only; a password for simple authentication, or `no_password=true` for
 * a shadow customer of the two-legged design. Also the token endpoint's CustomerDirectory.
 */
export function createCustomerService(deps: {
  db: Db;
  repo: CustomersRepository;
  devices: DevicesRepository;
  claims: ClaimsRepository;
  tokens: TokenService;
  audit: AuditService;
  secrets: Secrets;
  clock: Clock;
  limiter: FailureLimiter;
  settings: Settings;
}) {
  const { repo, tokens, audit, secrets, clock, limiter } = deps;

  const subjectOf = (c: CustomerRecord) => ({ kind: 'customer' as const, customerId: c.id, productId: String(c.productId) });

  async function mustFind(product: ProductRecord, email: string): Promise<CustomerRecord> {
    const c = email.length <= 254 ? await repo.findByEmail(product.id, email) : undefined;
    if (!c) throw new DomainError('not_found', `No customer ${email.slice(0, 254)} in this product`);
    return c;
  }

  const directory: CustomerDirectory = {
    async findByEmail(productId, email) {
      if (!/^\d+$/.test(productId) || email.length > 254) return undefined;
      const c = await repo.findByEmail(Number(productId), email);
      return c && { id: c.id, email: c.email };
    },
    async verifyPassword(productId, email, password, ip) {
      const key = `customer:${productId}:${email.toLowerCase()}`;
      await limiter.check(key, ip);
      const c = /^\d+$/.test(productId) && email.length <= 254 ? await repo.findByEmail(Number(productId), email) : undefined;
      // Shadow customers have no password and can never log in with one.
      const ok = await secrets.verifyPassword(c?.passwordHash ?? null, password);
      if (!c || !ok) {
        await limiter.fail(key, ip);
        if (c) await audit.record({ account: { kind: 'customer', id: c.id }, type: 'customer.login_failed', ip });
        return undefined;
      }
      await limiter.succeed(key);
      return { id: c.id, email: c.email };
    },
  };

  const view = (c: CustomerRecord, devices: string[]): CustomerView => ({ id: c.id, username: c.email, shadow: c.passwordHash === null, created_at: c.createdAt.toISOString(), devices });

  /**
   * A new customer: with a password (simple authentication) or none (a shadow customer). The
   * customer, its event and what `then` writes (its first token) are one transaction: a failure
   * leaves no customer behind, so that the caller's retry is not refused for a taken e-mail.
   */
  async function insert<T>(product: ProductRecord, body: NewCustomerBody, ip: string, details: Record<string, unknown>, then: (customer: CustomerRecord, tx: Tx) => Promise<T>): Promise<T> {
    const email = validateEmail(body.email, 'email');
    const noPassword = body.no_password === true || body.no_password === 'true';
    const hasPassword = body.password !== undefined && body.password !== '';
    if (hasPassword === noPassword) throw new DomainError('invalid_request', 'Send either password (simple authentication) or no_password=true (a shadow customer), not both and not neither');
    // Hashed before the transaction opens: argon2 takes long, and the transaction holds a connection.
    const passwordHash = hasPassword ? await secrets.hashPassword(validateNewPassword(body.password)) : null;
    const now = clock.now();
    const customer: CustomerRecord = { id: secrets.uuid(), productId: product.id, email, passwordHash, createdAt: now, updatedAt: now };
    return deps.db.transaction(async (tx) => {
      if (!(await repo.insert(customer, tx))) {
        throw new DomainError('conflict', `A customer with the e-mail ${email} already exists in this product`, { details: { errors: ['email already taken'] } });
      }
      await audit.record({ account: { kind: 'customer', id: customer.id }, type: 'customer.created', ip, details: { product_id: product.id, ...details, shadow: noPassword } }, tx);
      return then(customer, tx);
    });
  }

  return {
    directory,

    /**
     * POST /v1/products/:p/customers. The client must belong to the product and may create
     * customers (customers:create or full scope). Answers the new customer's first token.
     */
    async create(product: ProductRecord, client: AuthenticatedClient, body: NewCustomerBody, ip: string): Promise<TokenResponse> {
      if (client.kind !== 'registered' || client.record.owner.kind !== 'product' || client.record.owner.id !== String(product.id)) {
        throw new DomainError('invalid_client', 'The client must belong to this product');
      }
      return insert(product, body, ip, { client_id: client.id }, (customer, tx) => tokens.issue({
        subject: subjectOf(customer),
        clientId: client.id,
        scope: null,
        lifetime: resolveLifetime({}, clock.now(), deps.settings.tokenLifetimeSeconds),
        withRefreshToken: true,
      }, tx));
    },

    /**
     * POST /v1/products/:p/customers with a team member's token or the product's own (the
     * console): the customer record, and no token. Whoever manages the product is not the
     * customer, so nothing is handed out that would let it act as one; the customer logs in
     * itself (simple authentication), or the product's two-legged client mints its tokens.
     */
    async createByTeam(product: ProductRecord, by: Subject, body: NewCustomerBody, ip: string): Promise<CustomerView> {
      const who = by.kind === 'user' ? { user_id: by.userId } : by.kind === 'product' ? { product_token: true } : {};
      return insert(product, body, ip, who, async (customer) => view(customer, []));
    },

    async list(product: ProductRecord, page: number, perPage: number) {
      const { customers, total } = await repo.list(product.id, perPage, (page - 1) * perPage);
      const owned = await deps.devices.idsByOwners('customer', customers.map((c) => c.id));
      return {
        customers: customers.map((c) => view(c, owned.get(c.id) ?? [])),
        meta: pageMeta(page, perPage, total),
      };
    },

    /** A new password for a customer; its tokens are revoked so that it logs in again. */
    async setPassword(product: ProductRecord, email: string, password: unknown, ip: string): Promise<void> {
      const c = await mustFind(product, email);
      const hash = await secrets.hashPassword(validateNewPassword(password));
      await deps.db.transaction(async (tx) => {
        await repo.setPassword(c.id, hash, clock.now(), tx);
        await tokens.revokeSubject(subjectOf(c), null, tx);
      });
      await audit.record({ account: { kind: 'customer', id: c.id }, type: 'customer.password_changed', ip });
    },

    /** Deletes a customer, all or nothing: its tokens and claim codes are revoked, its devices released. */
    async remove(product: ProductRecord, email: string, ip: string): Promise<void> {
      const c = await mustFind(product, email);
      const owner = { kind: 'customer' as const, id: c.id };
      // All or nothing: never a customer still there with its devices released and its codes gone.
      await deps.db.transaction(async (tx) => {
        await tokens.revokeSubject(subjectOf(c), null, tx);
        await deps.claims.deleteForOwner(owner, tx);
        await deps.devices.releaseOwner(owner, tx);
        await repo.delete(c.id, tx);
      });
      await audit.record({ account: { kind: 'customer', id: c.id }, type: 'customer.deleted', ip, details: { product_id: product.id, email: c.email } });
    },
  };
}

export type CustomerService = ReturnType<typeof createCustomerService>;
