import { DomainError } from '../domain/errors.js';
import { FailureLimiter } from '../domain/failure-limiter.js';
import { clientIdFor, isWellFormedClientId, validateClientName, validateNewClient, type ClientOwner } from '../domain/oauth-clients.js';
import { parseClientScope, type Scope } from '../domain/scopes.js';
import type { Clock } from '../platform/clock.js';
import type { Secrets } from '../platform/secrets.js';
import type { CacheHub } from '../platform/cache-hub.js';
import type { ClientRecord, ClientsRepository } from '../repositories/clients.repository.js';
import type { Db, Tx } from '../storage/db.js';
import type { AuditService } from './audit.service.js';
import type { TokenService } from './tokens.service.js';

/** The web console's own public client: the one public client whose tokens get a refresh token. */
export const CONSOLE_CLIENT_ID = 'skyport-console';

/**
 * The public clients that Particle's own tools send for the password grant
 * (docs/particle-compatibility.md#public-clients). Their secrets are published, so they
 * authenticate nothing: they may only log a person in with a password (and the MFA steps after
 * it), never use client_credentials.
 */
export const PUBLIC_CLIENTS: ReadonlyArray<{ id: string; secret: string; tool: string }> = [
  { id: 'particle-api', secret: 'particle-api', tool: 'particle-api-js' },
  { id: 'particle-cli', secret: 'particle-cli', tool: 'particle-cli' },
  { id: 'CLI2', secret: 'client_secret_here', tool: 'particle-cli 3.43 login' },
  { id: 'user', secret: 'client_secret_here', tool: 'particle-cli 3.43 token create' },
  { id: 'particle', secret: 'particle', tool: 'Particle documentation examples' },
  { id: 'skyport-cli', secret: 'skyport-cli', tool: 'skyport CLI' },
  { id: CONSOLE_CLIENT_ID, secret: CONSOLE_CLIENT_ID, tool: 'the web console' },
];

/** An authenticated caller of the token endpoint. */
export type AuthenticatedClient =
  | { kind: 'public'; id: string }
  | { kind: 'registered'; id: string; record: ClientRecord };

/** The public shape of a client; the secret only at creation. */
export interface ClientView {
  id: string;
  name: string;
  type: 'installed' | 'web';
  scope: string | null;
  redirect_uri?: string;
  product_id?: number | string;
  secret?: string;
}

export function createClientService(deps: {
  db: Db;
  repo: ClientsRepository;
  tokens: TokenService;
  audit: AuditService;
  secrets: Secrets;
  clock: Clock;
  limiter: FailureLimiter;
  caches: CacheHub;
}) {
  const { repo, secrets, clock, limiter, audit } = deps;
  const publicDigests = new Map(PUBLIC_CLIENTS.map((c) => [c.id, secrets.sha256(c.secret)]));
  // Client records are read on every token request; a short cache keeps that off storage. A
  // change or deletion drops the record on every node (docs/architecture.md, "Caches in a cluster").
  const cache = deps.caches.cache<ClientRecord>('clients', 30_000, { maxEntries: 10_000 });

  const find = (id: string): Promise<ClientRecord | undefined> => cache.load(id, () => repo.findById(id));

  /** Deletes clients' tokens with them; the cache forgets them once the deletion commits. */
  async function dropTokensOf(ids: string[], tx: Tx): Promise<number> {
    tx.afterCommit(() => {
      for (const id of ids) cache.delete(id);
    });
    return deps.tokens.revokeClients(ids, tx);
  }

  function view(c: ClientRecord, secret?: string): ClientView {
    const v: ClientView = { id: c.id, name: c.name, type: c.type, scope: c.scope };
    if (c.redirectUri !== null) v.redirect_uri = c.redirectUri;
    if (c.owner.kind === 'product') v.product_id = /^\d+$/.test(c.owner.id) ? Number(c.owner.id) : c.owner.id;
    if (secret !== undefined) v.secret = secret;
    return v;
  }

  async function findOwned(owner: ClientOwner, id: string): Promise<ClientRecord> {
    const c = isWellFormedClientId(id) ? await repo.findById(id) : undefined;
    if (!c || c.owner.kind !== owner.kind || c.owner.id !== owner.id) throw new DomainError('not_found', 'Client not found');
    return c;
  }

  return {
    /**
     * Client authentication for the token, introspection and revocation endpoints (RFC 6749
     * §2.3.1). Failures count towards the client's and the address's lock-out.
     * `allowMissingSecret` admits a web client by its ID alone (customer creation,
     * docs/particle-compatibility.md#customers).
     */
    async authenticate(id: string | undefined, secret: string | undefined, ip: string, options: { allowMissingSecret?: boolean } = {}): Promise<AuthenticatedClient> {
      if (id === undefined || id === '') throw new DomainError('invalid_client', 'Invalid or missing client_id parameter');
      if (!isWellFormedClientId(id)) throw new DomainError('invalid_client', 'Client credentials are invalid');
      const publicDigest = publicDigests.get(id);
      // Lock-out is per client and address. Client IDs are not secret (web clients publish
      // theirs, and public clients' secrets are published too), so a lock for every address would
      // let anyone stop a product's back-end, or every particle-cli login, with a few wrong
      // secrets. Guessing a 160-bit secret gains nothing, and the per-address budget still applies.
      const key = `client:${id}@${ip}`;
      await limiter.check(key, ip);
      if (publicDigest !== undefined) {
        if (secret !== undefined && secrets.sameDigest(publicDigest, secrets.sha256(secret))) return { kind: 'public', id };
        if (secret === undefined) throw new DomainError('invalid_client', 'Missing client_secret parameter');
        await limiter.fail(key, ip);
        throw new DomainError('invalid_client', 'Client credentials are invalid');
      }
      const record = await find(id);
      if (record && secret === undefined && options.allowMissingSecret && record.type === 'web') {
        return { kind: 'registered', id, record };
      }
      if (secret === undefined) throw new DomainError('invalid_client', 'Missing client_secret parameter');
      // Hash even for an unknown client, so that timing does not tell which IDs exist.
      const given = secrets.sha256(secret);
      if (!record || !secrets.sameDigest(record.secretHash, given)) {
        await limiter.fail(key, ip);
        if (record) void audit.record({ account: record.owner, type: 'client.auth_failed', ip, details: { client_id: id } });
        throw new DomainError('invalid_client', 'Client credentials are invalid');
      }
      await limiter.succeed(key);
      return { kind: 'registered', id, record };
    },

    async create(owner: ClientOwner, body: Record<string, unknown>, ip: string): Promise<ClientView> {
      const input = validateNewClient(body);
      const secret = secrets.token();
      const now = clock.now();
      for (let attempt = 0; attempt < 5; attempt++) {
        const record: ClientRecord = {
          id: clientIdFor(input.name, secrets.digits(4 + attempt)),
          secretHash: secrets.sha256(secret),
          name: input.name,
          type: input.type,
          redirectUri: input.redirectUri,
          scope: input.scope,
          owner,
          createdAt: now,
          updatedAt: now,
        };
        if (await repo.insert(record)) {
          await audit.record({ account: owner, type: 'client.created', ip, details: { client_id: record.id, type: record.type, scope: record.scope } });
          return view(record, secret);
        }
      }
      throw new DomainError('conflict', 'Could not find a free client ID; try another name');
    },

    async list(owner: ClientOwner): Promise<ClientView[]> {
      return (await repo.listByOwner(owner)).map((c) => view(c));
    },

    async update(owner: ClientOwner, id: string, body: { name?: unknown; scope?: unknown }, ip: string): Promise<ClientView> {
      await findOwned(owner, id);
      const change: { name?: string; scope?: Scope } = {};
      if (body.name !== undefined) change.name = validateClientName(body.name);
      if (body.scope !== undefined) {
        if (body.scope !== null && typeof body.scope !== 'string') throw new DomainError('invalid_request', 'scope must be a string');
        change.scope = parseClientScope(body.scope as string | null);
      }
      const updated = await repo.update(id, change, clock.now());
      if (!updated) throw new DomainError('not_found', 'Client not found');
      cache.delete(id);
      await audit.record({ account: owner, type: 'client.updated', ip, details: { client_id: id, ...change } });
      return view(updated);
    },

    /** Deletes a client and revokes every token it made, all or nothing. */
    async remove(owner: ClientOwner, id: string, ip: string): Promise<void> {
      await findOwned(owner, id);
      const revoked = await deps.db.transaction(async (tx) => {
        await repo.delete(id, tx);
        return dropTokensOf([id], tx);
      });
      await audit.record({ account: owner, type: 'client.deleted', ip, details: { client_id: id, tokens_revoked: revoked } });
    },

    /** Removes every client of an owner and their tokens, within the owner's deletion. */
    async removeAllOf(owner: ClientOwner, tx: Tx): Promise<void> {
      await dropTokensOf(await repo.deleteByOwner(owner, tx), tx);
    },
  };
}

export type ClientService = ReturnType<typeof createClientService>;
