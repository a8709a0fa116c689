import { readFileSync } from 'node:fs';
import type { FastifyInstance, FastifyServerOptions } from 'fastify';
import type { Settings } from './config/settings.js';
import { FailureLimiter } from './domain/failure-limiter.js';
import { buildHttpApp } from './http/app.js';
import { systemClock, type Clock } from './platform/clock.js';
import { createSecrets, type Secrets } from './platform/secrets.js';
import { createAuditRepository } from './repositories/audit.repository.js';
import { createClientsRepository } from './repositories/clients.repository.js';
import { createMfaRepository } from './repositories/mfa.repository.js';
import { createTokensRepository } from './repositories/tokens.repository.js';
import { createUsersRepository } from './repositories/users.repository.js';
import { cacheUsers } from './repositories/users.cache.js';
import { createProductsRepository } from './repositories/products.repository.js';
import { createCustomersRepository } from './repositories/customers.repository.js';
import { createProductService } from './services/products.service.js';
import { createCustomerService } from './services/customers.service.js';
import { createDevicesRepository } from './repositories/devices.repository.js';
import { createClaimsRepository } from './repositories/claims.repository.js';
import { createDeviceService } from './services/devices.service.js';
import { createClaimService } from './services/claims.service.js';
import { createAccountService } from './services/accounts.service.js';
import { createAuditService } from './services/audit.service.js';
import { createClientService } from './services/clients.service.js';
import { createMfaService } from './services/mfa.service.js';
import { createOAuthService } from './services/oauth.service.js';
import { createTokenService } from './services/tokens.service.js';
import type { Db } from './storage/db.js';
import { openEmbedded } from './storage/embedded.js';
import { migrate } from './storage/migrate.js';
import { openPostgres } from './storage/postgres.js';

export const VERSION: string = (JSON.parse(readFileSync(new URL('../package.json', import.meta.url), 'utf8')) as { version: string }).version;

/** Opens the store that the settings name and brings its schema up to date. */
export async function openStorage(settings: Pick<Settings, 'databaseUrl' | 'dataDir'>): Promise<Db> {
  const db = settings.databaseUrl ? await openPostgres(settings.databaseUrl) : await openEmbedded(settings.dataDir);
  try {
    await migrate(db);
  } catch (err) {
    await db.close();
    throw err;
  }
  return db;
}

export interface SkyportOptions {
  /** An open, migrated store; by default the one the settings name. */
  db?: Db;
  clock?: Clock;
  secrets?: Secrets;
  logger?: FastifyServerOptions['logger'];
}

export interface Skyport {
  readonly settings: Settings;
  readonly db: Db;
  readonly app: FastifyInstance;
  readonly services: ReturnType<typeof wireServices>;
  close(): Promise<void>;
}

function wireServices(settings: Settings, db: Db, clock: Clock, secrets: Secrets) {
  const limiter = new FailureLimiter(clock, {
    maxConsecutive: settings.loginMaxFailures,
    lockoutSeconds: settings.loginLockoutSeconds,
    maxPerWindow: settings.ipMaxFailures,
    windowSeconds: settings.ipFailureWindowSeconds,
  });
  const users = cacheUsers(createUsersRepository(db), clock);
  const audit = createAuditService({ db, repo: createAuditRepository(db), clock });
  const tokens = createTokenService({ repo: createTokensRepository(db), secrets, clock, settings });
  const clients = createClientService({ repo: createClientsRepository(db), tokens, audit, secrets, clock, limiter });
  const productsRepo = createProductsRepository(db);
  const customersRepo = createCustomersRepository(db);
  const devicesRepo = createDevicesRepository(db);
  const claimsRepo = createClaimsRepository(db);
  const accounts = createAccountService({
    users, tokens, clients, audit, secrets, clock, limiter, signupOpen: settings.signup,
    soleMemberOf: (id) => productsRepo.soleMemberOf(id),
    // A deleted account's devices are released and its claim codes dropped.
    releaseOwned: (id) => db.transaction(async (tx) => {
      await claimsRepo.deleteForOwner({ kind: 'user', id }, tx);
      await devicesRepo.releaseOwner({ kind: 'user', id }, tx);
    }),
  });
  const mfa = createMfaService({ db, repo: createMfaRepository(db), users, accounts, tokens, audit, secrets, clock });
  const products = createProductService({ db, repo: productsRepo, customers: customersRepo, users, audit, secrets, clock });
  const customers = createCustomerService({ db, repo: customersRepo, devices: devicesRepo, claims: claimsRepo, tokens, audit, secrets, clock, limiter, settings });
  const devices = createDeviceService({ db, repo: devicesRepo, products: productsRepo, customers: customersRepo, users, audit, secrets, clock });
  const claims = createClaimService({ db, repo: claimsRepo, devices: devicesRepo, products: productsRepo, audit, secrets, clock, lifetimeSeconds: settings.claimCodeLifetimeSeconds });
  const oauth = createOAuthService({ tokens, accounts, mfa, customers: customers.directory, audit, clock, settings });
  return { limiter, audit, tokens, clients, accounts, mfa, oauth, products, customers, devices, claims };
}

/**
 * The composition root: storage, then services, then the HTTP app. Nothing here listens; see
 * server.ts. The device gateway (MQTT) and the bus that carries calls from API nodes to the
 * node holding a device's connection are wired here too once they exist
 * (docs/architecture.md, "Parts").
 */
export async function createSkyport(settings: Settings, options: SkyportOptions = {}): Promise<Skyport> {
  const clock = options.clock ?? systemClock;
  const secrets = options.secrets ?? createSecrets();
  const db = options.db ?? (await openStorage(settings));
  const services = wireServices(settings, db, clock, secrets);
  const app = await buildHttpApp({
    settings,
    ...services,
    version: VERSION,
    ...(options.logger === undefined ? {} : { logger: options.logger }),
    health: async () => {
      await db.query('SELECT 1');
      return db.kind;
    },
  });

  // Expired tokens, MFA challenges and claim codes are swept every ten minutes; they are refused anyway.
  const sweep = setInterval(() => {
    void Promise.all([services.tokens.purgeExpired(), services.mfa.purgeExpired(), services.claims.purgeExpired()]).catch((err) => app.log.warn({ err }, 'expiry sweep failed'));
  }, 10 * 60 * 1000);
  sweep.unref();

  let closed = false;
  return {
    settings,
    db,
    app,
    services,
    async close() {
      if (closed) return;
      closed = true;
      clearInterval(sweep);
      await app.close();
      await db.close();
    },
  };
}
