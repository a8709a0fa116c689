import { DomainError } from '../domain/errors.js';
import { isProductId, slugFor, validateDescription, validateNewProduct, validateProductName } from '../domain/products.js';
import { validateEmail } from '../domain/accounts.js';
import type { Clock } from '../platform/clock.js';
import type { CacheHub } from '../platform/cache-hub.js';
import type { Secrets } from '../platform/secrets.js';
import type { Db, Tx } from '../storage/db.js';
import type { ProductRecord, ProductsRepository } from '../repositories/products.repository.js';
import type { UsersRepository } from '../repositories/users.repository.js';
import type { AccessTokenRecord } from '../repositories/tokens.repository.js';
import type { ClientService } from './clients.service.js';
import type { TokenService } from './tokens.service.js';
import type { CustomersRepository } from '../repositories/customers.repository.js';
import type { DevicesRepository } from '../repositories/devices.repository.js';
import type { AuditService } from './audit.service.js';
import { accountOf } from './audit-account.js';

/** The product as the API shows it (docs/particle-compatibility.md#products-and-fleets). */
export interface ProductView {
  id: number;
  platform_id: number;
  name: string;
  slug: string;
  description: string;
  user: string | null;
  org: null;
  organization_id: null;
  groups: string[];
  settings: { location: Record<string, never>; known_application: { opt_in: boolean }; quarantine: boolean };
  device_protection: { status: string };
  created_at: string;
}

function denied(): DomainError {
  // Unknown and foreign products answer the same, so that nothing is learnt from the answer.
  return new DomainError('permission_denied', 'Product not found, or you are not a member of its team', {
    details: { info: "I didn't recognize that product, or you are not a member of its team" },
  });
}

/**
 * Products and their teams. `access` decides whether a token may manage a product: a user token
 * of a team member, or a token of the product itself (its clients' client_credentials tokens).
 * Customers manage nothing here.
 */
export function createProductService(deps: {
  db: Db;
  repo: ProductsRepository;
  customers: CustomersRepository;
  /** The product's devices leave it when it is deleted. */
  devices: Pick<DevicesRepository, 'leaveDeletedProduct'>;
  users: UsersRepository;
  clients: ClientService;
  tokens: TokenService;
  audit: AuditService;
  secrets: Secrets;
  clock: Clock;
  caches: CacheHub;
  /** How long `accessCached` remembers an answer (TOKEN_CACHE_SECONDS). */
  accessCacheMs?: number;
  /** Within the deletion's transaction, before the product goes: what the store does not cascade (its webhooks' delivery log). */
  releaseOwned?: (productId: number, tx: Tx) => Promise<void>;
  /** A product was deleted (committed): what keeps its parts in memory lets them go (its webhooks). */
  deleted?: (productId: number) => void;
}) {
  const { repo, clock, audit } = deps;
  // Answers of `access` and of team membership for the device routes, dropped whole on any
  // product or team change, on every node once it has committed (docs/architecture.md, "Caches
  // in a cluster"). `changes` counts those drops, another node's included: an answer read while
  // one happened is not kept, since it may be from before the change (a removed member keeping access).
  let changes = 0;
  const counted = { dropped: () => { changes += 1; } };
  const accessCache = deps.caches.cache<ProductRecord>('product-access', deps.accessCacheMs ?? 30_000, counted);
  const memberCache = deps.caches.cache<boolean>('product-members', deps.accessCacheMs ?? 30_000, counted);
  /** Drops every answer once a change has committed, here and on the other nodes. */
  function forgetAccess(): void {
    changes += 1;
    accessCache.clear();
    memberCache.clear();
  }
  /**
   * Drops them here before a change is written, so that this node's next requests do not go on
   * being served from memory while it is under way; the other nodes hear of it once it committed.
   */
  function forgetAccessHere(): void {
    changes += 1;
    accessCache.dropAll();
    memberCache.dropAll();
  }
  const creatorName = async (userId: string) => (await deps.users.findById(userId))?.username ?? null;

  async function view(p: ProductRecord): Promise<ProductView> {
    return {
      id: p.id,
      platform_id: p.platformId,
      name: p.name,
      slug: p.slug,
      description: p.description,
      user: await creatorName(p.createdBy),
      org: null,
      organization_id: null,
      groups: [],
      settings: { location: {}, known_application: { opt_in: false }, quarantine: false },
      device_protection: { status: 'disabled' },
      created_at: p.createdAt.toISOString(),
    };
  }

  async function lookup(idOrSlug: string): Promise<ProductRecord | undefined> {
    if (idOrSlug.length > 100) return undefined;
    return isProductId(idOrSlug) ? repo.find({ id: Number(idOrSlug) }) : repo.find({ slug: idOrSlug.toLowerCase() });
  }

  /** The product a token may manage, or permission_denied. */
  async function access(auth: AccessTokenRecord, idOrSlug: string): Promise<ProductRecord> {
    const s = auth.subject;
    if (s.kind === 'user') {
      if (idOrSlug.length > 100) throw denied();
      const found = await repo.findForUser(isProductId(idOrSlug) ? { id: Number(idOrSlug) } : { slug: idOrSlug.toLowerCase() }, s.userId);
      if (found?.member) return found.product;
      throw denied();
    }
    const product = await lookup(idOrSlug);
    if (product && s.kind === 'product' && s.productId === String(product.id)) return product;
    throw denied();
  }

  const subjectKey = (auth: AccessTokenRecord) => (auth.subject.kind === 'user' ? `u:${auth.subject.userId}` : auth.subject.kind === 'product' ? `p:${auth.subject.productId}` : 'c');

  return {
    access,
    /**
     * `access` remembered for a while: for the routes that reach a fleet's devices (calls, reads,
     * streams), which need the product's id, never its counters. Product and team writes drop
     * every answer on every node.
     */
    async accessCached(auth: AccessTokenRecord, idOrSlug: string): Promise<ProductRecord> {
      const key = `${subjectKey(auth)}|${idOrSlug}`;
      const hit = accessCache.get(key);
      if (hit) return hit;
      const before = changes;
      const product = await access(auth, idOrSlug);
      if (before === changes) accessCache.set(key, product);
      return product;
    },
    /** Whether a user is on a product's team, remembered as `accessCached` is (every device call of a member). */
    async isMemberCached(productId: number, userId: string): Promise<boolean> {
      const key = `${productId}|${userId}`;
      const hit = memberCache.get(key);
      if (hit !== undefined) return hit;
      const before = changes;
      const member = await repo.isMember(productId, userId);
      if (before === changes) memberCache.set(key, member);
      return member;
    },
    lookup,
    view,

    async create(userId: string, body: { name?: unknown; description?: unknown; platform_id?: unknown }, ip: string): Promise<ProductView> {
      const input = validateNewProduct(body);
      const now = clock.now();
      for (let attempt = 0; attempt < 6; attempt++) {
        const slug = slugFor(input.name, attempt === 0 ? 'v' : `v${deps.secrets.digits(3 + attempt)}`);
        const product = await deps.db.transaction(async (tx) => {
          const p = await repo.insert({ slug, name: input.name, description: input.description, platformId: input.platformId, createdBy: userId, createdAt: now, updatedAt: now }, tx);
          if (p) await repo.addMember(p.id, userId, 'administrator', now, tx);
          return p;
        });
        if (product) {
          await audit.record({ account: { kind: 'user', id: userId }, type: 'product.created', ip, details: { product_id: product.id, slug } });
          return view(product);
        }
      }
      throw new DomainError('conflict', 'Could not find a free slug for this name; try another name');
    },

    async listFor(auth: AccessTokenRecord): Promise<ProductView[]> {
      const s = auth.subject;
      if (s.kind === 'user') return Promise.all((await repo.listForUser(s.userId)).map(view));
      if (s.kind === 'product') {
        const p = await repo.find({ id: Number(s.productId) });
        return p ? [await view(p)] : [];
      }
      return [];
    },

    async update(product: ProductRecord, body: { name?: unknown; description?: unknown }): Promise<ProductView> {
      const change: { name?: string; description?: string } = {};
      if (body.name !== undefined) change.name = validateProductName(body.name);
      if (body.description !== undefined) change.description = validateDescription(body.description);
      if (Object.keys(change).length === 0) throw new DomainError('invalid_request', 'Nothing to change: send name or description');
      forgetAccessHere();
      const updated = await repo.update(product.id, change, clock.now());
      forgetAccess();
      if (!updated) throw denied();
      return view(updated);
    },

    /**
     * Deletes a product. A product that still has customers is deleted only when the request
     * confirms it by repeating the product's slug (`confirm=<slug>`), since its customers, their
     * tokens and the product's clients all go with it, all or nothing. Its devices stay, out of
     * any product; its customers' devices are released (devices.repository `leaveDeletedProduct`).
     */
    async remove(product: ProductRecord, confirm: string | undefined, actor: AccessTokenRecord, ip: string): Promise<void> {
      const customers = await deps.customers.count(product.id);
      if (customers > 0 && confirm !== product.slug) {
        throw new DomainError('conflict', `The product has ${customers} customer(s); to delete it anyway, repeat its slug: confirm=${product.slug}`);
      }
      const productId = String(product.id);
      await deps.db.transaction(async (tx) => {
        await deps.clients.removeAllOf({ kind: 'product', id: productId }, tx);
        await deps.tokens.revokeProduct(productId, tx);
        await deps.devices.leaveDeletedProduct(product.id, tx);
        await deps.releaseOwned?.(product.id, tx);
        await repo.delete(product.id, tx);
        tx.afterCommit(forgetAccess);
      });
      deps.deleted?.(product.id);
      const account = accountOf(actor.subject);
      await audit.record({ account, type: 'product.deleted', ip, details: { product_id: product.id, slug: product.slug } });
    },

    async team(product: ProductRecord) {
      return (await repo.members(product.id)).map((m) => ({ username: m.username, role: m.role, no_mfa: !m.mfaEnabled, product_id: product.id }));
    },

    /** Adds an existing account to the team (Particle mails an invitation; here it takes effect at once). */
    async addMember(product: ProductRecord, usernameRaw: unknown, ip: string, actor: AccessTokenRecord): Promise<{ username: string; role: string }> {
      const username = validateEmail(usernameRaw);
      const user = await deps.users.findByUsername(username);
      if (!user) throw new DomainError('not_found', `No account with the username ${username}; it must sign up first`);
      forgetAccessHere();
      if (!(await repo.addMember(product.id, user.id, 'administrator', clock.now()))) throw new DomainError('conflict', `${user.username} is already a member of this team`);
      forgetAccess();
      const account = accountOf(actor.subject);
      await audit.record({ account, type: 'team.member_added', ip, details: { product_id: product.id, username: user.username } });
      return { username: user.username, role: 'administrator' };
    },

    async removeMember(product: ProductRecord, username: string, ip: string, actor: AccessTokenRecord): Promise<void> {
      const user = username.length <= 254 ? await deps.users.findByUsername(username) : undefined;
      const members = await repo.members(product.id);
      if (!user || !members.some((m) => m.userId === user.id)) throw new DomainError('not_found', `${username.slice(0, 254)} is not a member of this team`);
      if (members.length === 1) throw new DomainError('conflict', 'The last member of a team cannot be removed; delete the product instead');
      forgetAccessHere();
      await repo.removeMember(product.id, user.id);
      forgetAccess();
      const account = accountOf(actor.subject);
      await audit.record({ account, type: 'team.member_removed', ip, details: { product_id: product.id, username: user.username } });
    },

  };
}

export type ProductService = ReturnType<typeof createProductService>;
