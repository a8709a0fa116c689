import { VERSION } from './version.js';
import type { FastifyInstance, FastifyServerOptions } from 'fastify';
import type { Settings } from './config/settings.js';
import { buildHttpApp } from './http/app.js';
import type { CompileSchemas } from './http/compiled-schemas.js';
import { createMetrics, type Metrics } from './platform/metrics.js';
import type { GatewayPorts } from './http/routes/gateway.routes.js';
import { systemClock, type Clock } from './platform/clock.js';
import { createSecrets, type Secrets } from './platform/secrets.js';
import { createCacheHub, localCaches, type CacheHub } from './platform/cache-hub.js';
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
import { cacheDevices, type DeviceChanges } from './repositories/devices.cache.js';
import type { DeviceOwner, DeviceScope } from './repositories/devices.repository.js';
import { createClaimsRepository } from './repositories/claims.repository.js';
import { createDeviceAccess } from './services/devices/access.js';
import { createDeviceAuthenticator } from './services/devices/device-auth.js';
import { createDeviceEdits } from './services/devices/edit.js';
import type { Devices } from './services/devices/index.js';
import { createDeviceLists } from './services/devices/lists.js';
import { createFleetMembership } from './services/devices/membership.js';
import { createOwnerNames } from './services/devices/owner-names.js';
import { createOwnership } from './services/devices/ownership.js';
import { createProvisioning } from './services/devices/provisioning.js';
import { createDeviceViews } from './services/devices/view.js';
import { createClaimService } from './services/claims.service.js';
import { createAccountService } from './services/accounts.service.js';
import { createAuditService } from './services/audit.service.js';
import { createClientService } from './services/clients.service.js';
import { createFailureLimiter } from './services/failure-limits.js';
import { createRateLimits, type RateLimits } from './services/rate-limits/index.js';
import { createMfaService } from './services/mfa.service.js';
import { createOAuthService } from './services/oauth.service.js';
import { createTokenService } from './services/tokens.service.js';
import type { Db } from './storage/db.js';
import { openEmbedded } from './storage/embedded.js';
import { migrate } from './storage/migrate.js';
import { watchStore, type StoreWatch } from './storage/watch.js';
import type { Bus } from './bus/bus.js';
import { createInProcessBus } from './bus/in-process.js';
import { createGateway, type Gateway } from './gateway/gateway.js';
import { startClusterDuties, type ClusterDuties } from './cluster/index.js';
import { listenGateway } from './gateway/listeners.js';
import { createPresenceRepository } from './repositories/presence.repository.js';
import { createPresenceService, type PendingPresence } from './services/presence.service.js';
import { createDeviceCallService } from './services/device-calls.service.js';
import { createEventService } from './services/events.service.js';
import { createConfigSchemasRepository } from './repositories/config-schemas.repository.js';
import { createConfigValuesRepository } from './repositories/config-values.repository.js';
import { createConfigHistoryRepository } from './repositories/config-history.repository.js';
import { createConfiguration } from './services/config/index.js';
import type { ConfigReader } from './services/config/reader.js';
import type { HeldDevices } from './services/config/delivery.js';
import { DomainError } from './domain/errors.js';
import { windowFor } from './storage/batcher.js';
import { createDeviceConfigStateRepository } from './repositories/device-config-state.repository.js';
import type { Log } from './platform/log.js';
import { createWebhooksRepository, userScope } from './repositories/webhooks.repository.js';
import { createWebhooks } from './services/webhooks/index.js';
import { createFirmwareRepository } from './repositories/firmware.repository.js';
import { createDeviceGroupsRepository } from './repositories/device-groups.repository.js';
import { createFirmware } from './services/firmware/index.js';
import { createFirmwareUpdatesRepository } from './repositories/firmware-updates.repository.js';
import { createFirmwareRolloutsRepository } from './repositories/firmware-rollouts.repository.js';
import { createFirmwareUpdates, type FirmwareLinks, type FirmwareSource } from './services/firmware/updates/index.js';
import type { CloudEvent } from './bus/bus.js';

export { VERSION };

/** Opens the store that the settings name and brings its schema up to date. */
export async function openStorage(settings: Pick<Settings, 'databaseUrl' | 'dataDir' | 'databaseConnectTimeoutSeconds' | 'databaseQueryTimeoutSeconds' | 'databasePoolSize'>, opening?: Promise<Db>): Promise<Db> {
  // pg (and NATS's client, below) are loaded only by the nodes that use them: a node on the
  // embedded store, or alone, starts without them.
  const db = opening ? await opening : settings.databaseUrl
    ? await (await import('./storage/postgres.js')).openPostgres(settings.databaseUrl, { poolSize: settings.databasePoolSize, connectTimeoutMs: settings.databaseConnectTimeoutSeconds * 1000, queryTimeoutMs: settings.databaseQueryTimeoutSeconds * 1000 })
    : await openEmbedded(settings.dataDir);
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
  /** When the HTTP app compiles its schemas (src/http/compiled-schemas.ts): each on its route's first use unless a test says otherwise. */
  compileSchemas?: CompileSchemas;
  /** The bus to other nodes; by default the in-process one. */
  bus?: Bus;
  /** Places where tests put something between parts, to order events that races would (never set in production). */
  seams?: Seams;
  /** Which firmware devices should run, and the images: by default the product firmware's (tests give their own). */
  firmware?: FirmwareSource;
}

export interface Seams {
  /** Wraps what configuration delivery reads (e.g. to hold a fan-out's read back until a later write was delivered). */
  configReader?: (reader: ConfigReader) => ConfigReader;
  /** How many devices a fan-out reads at once (tests: a small fleet in several shares). */
  fanOutShares?: { first: number; each: number };
  /** The expiry sweeps' period instead of ten minutes, and a hook told of each sweep this node runs. */
  expirySweep?: { everyMs: number; swept(): void };
  /** A hook told of each rollout tick this node runs (the leader's, in a cluster). */
  rolloutTick?: { ticked(): void };
}

export interface ListenAddresses {
  /** http://host:port of the REST API (on a gateway node: of /healthz and /metrics only). */
  url: string;
  /** mqtt://host:port (or mqtts://) of the device gateway; none on an `api` node, which holds no devices. */
  mqttUrl: string | undefined;
  /** ws://host:port/mqtt when MQTT over WebSocket is on. */
  wsUrl: string | undefined;
}

export interface Skyport {
  readonly settings: Settings;
  readonly db: Db;
  readonly app: FastifyInstance;
  readonly services: ReturnType<typeof wireServices>;
  readonly bus: Bus;
  readonly gateway: Gateway;
  /** The per-address limits' counters (docs/security.md, "Limits on request volume"). */
  readonly rateLimits: RateLimits;
  /** Opens the HTTP API and the device gateway on the ports of the settings (or the overrides). */
  listen(overrides?: Partial<Pick<Settings, 'host' | 'port' | 'mqttPort' | 'mqttWsPort'>>): Promise<ListenAddresses>;
  close(): Promise<void>;
  /** The step a shutdown under way is at (null before `close`): what a shutdown that takes too long waits for. */
  shutdownStage(): string | null;
}

function wireServices(settings: Settings, db: Db, store: StoreWatch, clock: Clock, secrets: Secrets, bus: Bus, caches: CacheHub, deviceChanges: DeviceChanges, log: () => Log, seams: Seams, metrics: Metrics, here: HeldDevices, updates: { source: FirmwareSource | undefined; links: FirmwareLinks }, presence: PendingPresence) {
  const limiter = createFailureLimiter('logins', { bus, clock, settings, log });
  const users = cacheUsers(createUsersRepository(db), caches);
  const audit = createAuditService({ repo: createAuditRepository(db), clock });
  const tokens = createTokenService({ db, repo: createTokensRepository(db), secrets, clock, settings, caches });
  const clients = createClientService({ db, repo: createClientsRepository(db), tokens, audit, secrets, clock, limiter, caches });
  const productsRepo = createProductsRepository(db);
  const customersRepo = createCustomersRepository(db);
  const devicesRepo = cacheDevices(createDevicesRepository(db), caches, settings.tokenCacheSeconds * 1000, deviceChanges);
  const claimsRepo = createClaimsRepository(db);
  const accounts = createAccountService({
    db, users, tokens, clients, audit, secrets, clock, limiter, signupOpen: settings.signup,
    soleMemberOf: (id) => productsRepo.soleMemberOf(id),
    // A deleted account's devices are released, its claim codes and its webhooks dropped.
    releaseOwned: async (id, tx) => {
      await claimsRepo.deleteForOwner({ kind: 'user', id }, tx);
      await devicesRepo.releaseOwner({ kind: 'user', id }, tx);
      await webhooks.removeAll(userScope(id), tx);
    },
    deleted: (id) => webhooks.forget(userScope(id)),
  });
  const mfa = createMfaService({ db, repo: createMfaRepository(db), users, accounts, tokens, audit, secrets, clock });
  const products = createProductService({
    db, repo: productsRepo, customers: customersRepo, devices: devicesRepo, users, clients, tokens, audit, secrets, clock, caches, accessCacheMs: settings.tokenCacheSeconds * 1000,
    // The product's webhooks go with it, their delivery log too; every node's index lets them go.
    releaseOwned: (productId, tx) => webhooks.removeAll({ kind: 'product', productId }, tx),
    deleted: (productId) => webhooks.forget({ kind: 'product', productId }),
  });
  const customers = createCustomerService({ db, repo: customersRepo, devices: devicesRepo, claims: claimsRepo, tokens, audit, secrets, clock, limiter, settings });
  const deviceAccess = createDeviceAccess({ repo: devicesRepo, isMember: products.isMemberCached, presence });
  const ownerNames = createOwnerNames({ customers: customersRepo, users, clock });
  // Views show each product device's groups and target (firmware is wired below).
  const deviceViews = createDeviceViews({ ownerNames, firmware: (list) => firmware.targets.describe(list) });
  // A device's configuration is delivered again once it is a development device (config is wired below).
  const deviceEdits = createDeviceEdits({ repo: devicesRepo, clock, becameDevelopment: (productId, id) => config.delivery.deviceChanged(productId, id) });
  const devices: Devices = {
    access: deviceAccess,
    views: deviceViews,
    lists: createDeviceLists({ repo: devicesRepo, views: deviceViews, presence }),
    provisioning: createProvisioning({ db, repo: devicesRepo, audit, secrets, clock, views: deviceViews }),
    membership: createFleetMembership({ db, repo: devicesRepo, products: productsRepo, access: deviceAccess, audit }),
    ownership: createOwnership({ db, repo: devicesRepo, products: productsRepo, access: deviceAccess, audit }),
    edits: deviceEdits,
  };
  const deviceAuth = createDeviceAuthenticator({ db, repo: devicesRepo, secrets });
  const claims = createClaimService({ db, repo: claimsRepo, devices: devicesRepo, products: productsRepo, audit, secrets, clock, lifetimeSeconds: settings.claimCodeLifetimeSeconds });
  const oauth = createOAuthService({ db, tokens, accounts, mfa, customers: customers.directory, audit, clock, settings, issued: (grant) => metrics.tokensIssued.inc({ grant }) });
  const deviceCalls = createDeviceCallService({ bus, callTimeoutSeconds: settings.deviceCallTimeoutSeconds, observe: (kind, outcome, seconds) => metrics.deviceCommands.observe({ kind, outcome }, seconds) });
  const webhooks = createWebhooks({
    db, repo: createWebhooksRepository(db), bus, clock, secrets, audit, log,
    settings: { allowPrivate: settings.webhookAllowPrivate, leaseSeconds: settings.webhookLeaseSeconds, concurrency: settings.webhookConcurrency, hostConcurrency: settings.webhookHostConcurrency, timeoutSeconds: settings.webhookTimeoutSeconds },
    // PRODUCT_USER_ID and PRODUCT_VERSION of the templates: the owner's name, the device's firmware.
    describe: async (e) => ({
      ownerName: e.owner ? await ownerNames.ofOwner(e.owner) : null,
      firmwareVersion: e.coreid === 'api' ? null : (await devicesRepo.findById(e.coreid))?.firmwareVersion ?? null,
    }),
    metrics: { attempt: (outcome, seconds) => { metrics.webhookAttempts.inc({ outcome }); if (seconds !== null) metrics.webhookLatency.observe(seconds); } },
  });
  const events = createEventService({ bus, clock, enqueue: (e) => webhooks.enqueue(e) });
  // The cloud's own events (firmware's): to the streams, and stored for the webhooks that take them.
  const publish = (e: CloudEvent) => events.emit(e);
  const userName = async (id: string) => (await users.findById(id))?.username;
  // Product firmware, releases and groups (docs/firmware.md); its events go to the streams and webhooks as the API's do.
  const firmware = createFirmware({
    db, repo: createFirmwareRepository(db), groups: createDeviceGroupsRepository(db), rollouts: createFirmwareRolloutsRepository(db), bus, clock, audit, log, edits: deviceEdits,
    maxBytes: settings.firmwareMaxBytes, userNames: userName, publish,
    views: settings.tokenCacheSeconds > 0 ? caches.cache<boolean>('firmware-views', settings.tokenCacheSeconds * 1000) : undefined,
  });
  const config = createConfiguration({
    db, bus, audit, clock, log, timeoutMs: settings.deviceCallTimeoutSeconds * 1000, batchWindowMs: windowFor(db.kind),
    schemas: createConfigSchemasRepository(db), values: createConfigValuesRepository(db), history: createConfigHistoryRepository(db),
    state: createDeviceConfigStateRepository(db), products: productsRepo, devices: devicesRepo, wrapReader: seams.configReader, shares: seams.fanOutShares, store,
    here, observe: (outcome) => metrics.configDeliveries.inc({ outcome }),
    userNames: userName,
  });
  // Firmware updates of the devices held here, of the images the product firmware targets; their
  // events reach streams and webhooks as a device's own.
  const firmwareUpdates = createFirmwareUpdates({
    repo: createFirmwareUpdatesRepository(db), source: updates.source ?? firmware.targets, links: updates.links, bus, clock, secrets, log,
    settings: { transfers: settings.firmwareTransfers, timeoutSeconds: settings.firmwareUpdateTimeoutSeconds }, batchWindowMs: windowFor(db.kind),
    metrics: { bytesSent: (n) => metrics.firmwareBytesSent.inc(n), outcome: (outcome) => metrics.firmwareUpdates.inc({ outcome }) },
    changed: (id) => devicesRepo.forget(id),
    described: (id) => presence.described(id),
    emit: async (deviceId, name, data) => {
      const d = await devicesRepo.findById(deviceId);
      if (d) await publish({ name, data, ttl: 60, private: true, published_at: clock.now().toISOString(), coreid: deviceId, owner: d.owner, productId: d.productId });
    },
  });
  return { limiter, audit, tokens, clients, accounts, mfa, oauth, products, customers, devices, deviceAuth, claims, deviceCalls, events, config, devicesRepo, webhooks, firmware, firmwareUpdates };
}

/**
 * The composition root: storage, the bus, services, the HTTP app and the device gateway.
 * Nothing listens until `listen` (server.ts calls it); tests inject requests into `app`.
 * Everything from the API to a device goes through the bus (docs/architecture.md, "Parts").
 */
export async function createSkyport(settings: Settings, options: SkyportOptions = {}): Promise<Skyport> {
  const clock = options.clock ?? systemClock;
  const secrets = options.secrets ?? createSecrets();
  const opened = options.db ?? (await openStorage(settings));
  // Services log through the HTTP app's logger, which is built after them.
  const logs: { app?: Log } = {};
  const serviceLog = (): Log => logs.app ?? { error: () => undefined, warn: () => undefined, info: () => undefined, debug: () => undefined };
  // The gateway is made after the app (it logs through it); the gauges read it and the services when scraped.
  const held: { gateway?: Gateway } = {};
  // Whether the store answers, as every statement finds it (docs/operations.md, "When the store goes away").
  const { db, watch: store } = watchStore(opened, { clock, log: serviceLog, failed: () => metrics.storageUnavailable.inc() });
  const metrics = createMetrics({
    devicesConnected: () => held.gateway?.size ?? 0,
    configDeliveriesInProgress: () => services.config.delivery.inProgress(),
    storageUp: () => store.state() === 'up',
    webhookQueue: () => services.webhooks.queue(),
    firmwareTransfers: () => services.firmwareUpdates.inProgress(),
    ...(opened.connections ? { storageConnections: opened.connections.bind(opened) } : {}),
  }, { processMetrics: settings.metrics !== 'off' });
  // One node: everything in this process. A cluster: nodes reach each other through NATS (or,
  // in tests, a bus the nodes share), and caches and per-address counts are shared through it.
  const clustered = Boolean(settings.natsUrl || options.bus);
  let bus: Bus;
  try {
    bus = options.bus ?? (settings.natsUrl ? await (await import('./bus/nats.js')).createNatsBus({
      servers: settings.natsUrl, log: serviceLog, ...(settings.nodeId ? { nodeId: settings.nodeId } : {}),
      observe: (kind, outcome, seconds) => metrics.busRequests.observe({ kind, outcome }, seconds),
    }) : createInProcessBus(clock));
  } catch (err) {
    if (!options.db) await db.close();
    throw err;
  }
  // Ownership and product changes made through the API reach the connections of the devices once
  // they have committed, with the committed scope, so that events follow it at once (the gateway
  // is built after the services).
  // In a cluster the device may be connected to another node: every node is told (the bus's
  // notices reach the sender too), and the node holding it re-scopes its connection.
  const deviceChanges: DeviceChanges = {
    moved: (devices) => bus.notify('devices.moved', devices.map((d) => ({ id: d.id, owner: d.owner, productId: d.productId }))),
    released: (owner) => bus.notify('devices.released', owner),
  };
  const unlistenScopes = [
    bus.listen('devices.moved', (devices) => { for (const d of devices as DeviceScope[]) gateway.rescope(d.id, { owner: d.owner, productId: d.productId }); }),
    bus.listen('devices.released', (owner) => gateway.releaseOwner(owner as DeviceOwner)),
  ];
  // What a write drops from a node's caches is dropped on every node (docs/architecture.md, "Caches in a cluster").
  // One node: nothing to tell anyone, and no notice costs a turn of the event loop.
  const caches = clustered ? createCacheHub(bus, clock, { log: serviceLog }) : localCaches(clock);
  // Configuration is delivered by the node that holds the device, to its own connections.
  const here: HeldDevices = {
    products: () => held.gateway?.heldProducts() ?? [],
    heldIn: (productId) => held.gateway?.heldIn(productId) ?? [],
    send: (id, command, timeoutMs) => (held.gateway ? held.gateway.command(id, command, timeoutMs) : Promise.reject(new DomainError('device_offline', 'The device is not connected to this node'))),
  };
  // Firmware is sent by the node that holds the device, on its connection.
  const links: FirmwareLinks = {
    holds: (id) => held.gateway?.holds(id) ?? false,
    heldIn: (productId) => held.gateway?.heldIn(productId) ?? [],
    link: (id) => held.gateway?.otaLink(id) ?? null,
  };
  // Presence is written by the gateway (below); the API's device reads wait for what it has not stored yet.
  const presenceRepo = createPresenceRepository(db);
  const presence = createPresenceService({
    repo: presenceRepo, clock, log: serviceLog, node: bus.nodeId, batchWindowMs: windowFor(db.kind), changed: (id) => services.devicesRepo.forget(id), store,
  });
  const services = wireServices(settings, db, store, clock, secrets, bus, caches, deviceChanges, serviceLog, options.seams ?? {}, metrics, here, { source: options.firmware, links }, presence);
  // Per-address limits count across the nodes of a cluster; on one node, in this process alone.
  const rateLimits = createRateLimits({ clock, bus, shared: clustered, leaseSeconds: settings.nodeLeaseSeconds });
  // What the device gateway listens on, once it does; before that, what the settings ask for.
  const tlsOn = Boolean(settings.mqttTlsCert && settings.mqttTlsKey);
  let gatewayPorts: GatewayPorts = { mqttPort: settings.mqttPort, wsPort: settings.mqttWsPort, tls: tlsOn };
  const app = await buildHttpApp({
    settings,
    metrics,
    rateLimits,
    gatewayPorts: () => gatewayPorts,
    ...services,
    version: VERSION,
    ...(options.logger === undefined ? {} : { logger: options.logger }),
    ...(options.compileSchemas === undefined ? {} : { compileSchemas: options.compileSchemas }),
    health: {
      storage: db.kind,
      check: async () => { await db.query('SELECT 1'); },
      role: settings.role,
      nodeId: bus.nodeId,
      nats: settings.natsUrl ? () => bus.state() : undefined,
    },
  });

  logs.app = app.log;
  const log = () => app.log;
  const gateway = createGateway({
    bus, presence, clock, secrets, log,
    connectOutcome: (outcome) => metrics.deviceConnects.inc({ outcome }),
    // Failed device connects are limited per device and address, like client authentications.
    limiter: createFailureLimiter('connects', { bus, clock, settings, log }),
    authenticate: (id, secret) => services.deviceAuth.authenticate(id, secret),
    // Answered once the device's connect is stored: whoever the device tells next (the phone that
    // set it up) lists it online (docs/device-protocol.md, "Claiming").
    claim: (id, code) => presence.stored(id).then(() => services.claims.redeem(id, code)),
    enqueue: (event) => services.webhooks.enqueue(event),
    configHello: (id, hashes) => {
      // The firmware version of the `hello` just before decides which settings apply
      // (docs/particle-compatibility.md#firmware-ranges).
      void presence.described(id).then(() => services.config.delivery.onHello(id, hashes)).catch((err) => app.log.warn({ err, device: id }, 'configuration sync failed'));
    },
    firmwareHello: (id, hello, first) => services.firmwareUpdates.onHello(id, hello, first),
    ota: (id, message) => services.firmwareUpdates.onMessage(id, message),
    // A configuration write on any node brings a device held here up to date, in its turn here.
    configSync: async (id, productId, modules) => ({ ok: true, value: await services.config.delivery.syncHere(productId, id, modules) }),
  });
  held.gateway = gateway;
  let listeners: { close(): Promise<void> } | undefined;
  // In a cluster: the node's lease, the leader's presence check (docs/architecture.md, "Presence and node leases").
  let duties: ClusterDuties | undefined;

  // Work done once per cluster runs on the leader, or on the node itself without NATS
  // (docs/architecture.md, "Once per cluster").
  const leadsHere = () => !settings.natsUrl || (duties?.leader.leads() ?? false);
  // Expired tokens, MFA challenges and claim codes are swept every ten minutes; they are refused
  // anyway. In a cluster the leader sweeps, once for all nodes (docs/architecture.md, "Once per cluster").
  const swept = options.seams?.expirySweep;
  const sweep = setInterval(() => {
    if (!leadsHere()) return;
    swept?.swept();
    void Promise.all([services.tokens.purgeExpired(), services.mfa.purgeExpired(), services.claims.purgeExpired(), services.webhooks.purge()]).catch((err) => app.log.warn({ err }, 'expiry sweep failed'));
  }, swept?.everyMs ?? 10 * 60 * 1000);
  sweep.unref();

  // Staged rollouts advance once per cluster: on the leader, or on the node itself without NATS.
  const rolloutTicks = setInterval(() => {
    if (!leadsHere()) return;
    options.seams?.rolloutTick?.ticked();
    services.firmware.rollouts.tick().catch((err) => app.log.warn({ err }, 'rollout tick failed'));
  }, settings.firmwareRolloutTickSeconds * 1000);
  rolloutTicks.unref();

  /** Where close() is: null until it is called, then each step's name (shutdownStage). */
  let stage: string | null = null;
  return {
    settings,
    db,
    app,
    services,
    bus,
    gateway,
    rateLimits,
    async listen(overrides = {}) {
      const host = overrides.host ?? settings.host;
      // One node holds every connection, so whatever the store says, no device is online yet.
      if (!options.bus && !settings.natsUrl) await presence.markAllOffline();
      // A cluster node takes its lease before it takes devices (docs/architecture.md, "Presence and node leases").
      if (settings.natsUrl && !duties) {
        duties = await startClusterDuties({
          bus, leaseSeconds: settings.nodeLeaseSeconds, presence: presenceRepo, held: () => gateway.held(),
          forget: (id) => services.devicesRepo.forget(id), clock, log,
        });
      }
      // Deliveries pending from before (a restart, another node gone) are sent from now on.
      await services.webhooks.start();
      await app.listen({ host, port: overrides.port ?? settings.port });
      const address = app.server.address();
      const port = typeof address === 'object' && address ? address.port : settings.port;
      const shown = host === '0.0.0.0' || host === '::' ? 'localhost' : host;
      const url = `http://${shown}:${port}`;
      // An API node holds no device connections: no MQTT port (docs/operations.md, "Roles").
      if (settings.role === 'api') return { url, mqttUrl: undefined, wsUrl: undefined };
      const tls = settings.mqttTlsCert && settings.mqttTlsKey ? { certFile: settings.mqttTlsCert, keyFile: settings.mqttTlsKey } : undefined;
      try {
        const wsPort = 'mqttWsPort' in overrides ? overrides.mqttWsPort : settings.mqttWsPort;
        const opened = await listenGateway(gateway, { host, port: overrides.mqttPort ?? settings.mqttPort, tls, wsPort, trustProxy: settings.trustProxy });
        listeners = opened;
        gatewayPorts = { mqttPort: opened.mqttPort, wsPort: opened.wsPort, tls: tls !== undefined };
        return {
          url,
          mqttUrl: `${tls ? 'mqtts' : 'mqtt'}://${shown}:${opened.mqttPort}`,
          wsUrl: opened.wsPort === undefined ? undefined : `ws://${shown}:${opened.wsPort}/mqtt`,
        };
      } catch (err) {
        await app.close();
        throw err;
      }
    },
    async close() {
      if (stage !== null) return;
      // Each step is named before it is awaited, so that a shutdown that hangs says where.
      // Stop taking connections, disconnect the devices (which lets the listeners finish closing).
      stage = 'disconnecting the devices';
      clearInterval(sweep);
      clearInterval(rolloutTicks);
      for (const unlisten of unlistenScopes) unlisten();
      const stopped = listeners?.close();
      await gateway.close(settings.shutdownGraceSeconds * 1000);
      await stopped;
      // The transfers the disconnections cut have their progress stored.
      stage = 'storing the firmware transfers cut short';
      await services.firmwareUpdates.close();
      // After the devices: their last events' deliveries are stored; those under way finish, the rest go back to the store.
      stage = 'finishing the webhook deliveries under way';
      await services.webhooks.stop();
      // Its devices are stored offline: the lease goes, and another node leads.
      stage = 'giving up the node\'s lease';
      await duties?.close();
      stage = 'finishing the HTTP requests under way';
      await app.close();
      // After the streams ended: the other nodes stop counting this node's at once.
      rateLimits.close();
      caches.close();
      store.close();
      stage = 'closing the connection to NATS';
      await bus.close();
      stage = 'closing the store';
      await db.close();
      stage = 'closed';
    },
    shutdownStage: () => stage,
  };
}
