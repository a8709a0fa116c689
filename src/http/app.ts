import Fastify, { LogController, type FastifyInstance, type FastifyReply, type FastifyRequest, type FastifyServerOptions } from 'fastify';
import formbody from '@fastify/formbody';
import swagger from '@fastify/swagger';
import { LONE_SURROGATE } from '../domain/device-protocol.js';
import { DomainError } from '../domain/errors.js';
import type { Settings } from '../config/settings.js';
import type { AccountService } from '../services/accounts.service.js';
import type { AuditService } from '../services/audit.service.js';
import type { ClientService } from '../services/clients.service.js';
import type { MfaService } from '../services/mfa.service.js';
import type { OAuthService } from '../services/oauth.service.js';
import type { TokenService } from '../services/tokens.service.js';
import type { ProductService } from '../services/products.service.js';
import type { CustomerService } from '../services/customers.service.js';
import type { Devices } from '../services/devices/index.js';
import type { ClaimService } from '../services/claims.service.js';
import { deviceRoutes, productDeviceRoutes } from './routes/devices.routes.js';
import { deviceCallRoutes, productDeviceCallRoutes } from './routes/device-calls.routes.js';
import { eventRoutes, eventStreams, productEventRoutes } from './routes/events.routes.js';
import { configRoutes } from './routes/config.routes.js';
import type { Configuration } from '../services/config/index.js';
import type { DeviceCallService } from '../services/device-calls.service.js';
import type { EventService } from '../services/events.service.js';
import { createGuard } from './auth.js';
import { productScope } from './product-scope.js';
import { frameworkError, installErrorHandling, requestIdOf, routeNotFound, sendError, stampRequestId } from './error-handler.js';
import { allowListedOrigins } from './cors.js';
import { metricsRoutes } from './metrics.js';
import { requestLimits } from './rate-limits.js';
import type { RateLimits } from '../services/rate-limits/index.js';
import type { Metrics } from '../platform/metrics.js';
import { consoleBuilt, consolePages } from './console.js';
import { noSniff } from './security-headers.js';
import { lazyChildLogger, loggerOptions, logRequests } from './logging.js';
import { ErrorBody } from './schemas.js';
import { schemaCompilers, type CompileSchemas } from './compiled-schemas.js';
import { proxyTrust } from '../platform/proxies.js';
import { accessTokenRoutes } from './routes/access-tokens.routes.js';
import { clientRoutes, productClientRoutes } from './routes/clients.routes.js';
import { healthRoutes, type HealthDeps } from './routes/health.routes.js';
import { gatewayRoutes, type GatewayPorts } from './routes/gateway.routes.js';
import { oauthRoutes } from './routes/oauth.routes.js';
import { oauthMetadataRoutes } from './routes/oauth-metadata.routes.js';
import { userRoutes } from './routes/users.routes.js';
import { productRoutes, productTeamRoutes } from './routes/products.routes.js';
import { customerRoutes } from './routes/customers.routes.js';
import { productWebhookRoutes, webhookRoutes } from './routes/webhooks.routes.js';
import type { Webhooks } from '../services/webhooks/index.js';
import { firmwareRoutes } from './routes/firmware.routes.js';
import { groupRoutes } from './routes/groups.routes.js';
import { rolloutRoutes } from './routes/rollouts.routes.js';
import { RolloutViewSchema } from '../services/firmware/rollouts/index.js';
import { FirmwareViewSchema } from '../services/firmware/images.js';
import { GroupViewSchema } from '../services/firmware/groups.js';
import type { Firmware } from '../services/firmware/index.js';
import type { FirmwareUpdates } from '../services/firmware/updates/index.js';

export interface HttpDeps {
  settings: Settings;
  accounts: AccountService;
  audit: AuditService;
  clients: ClientService;
  mfa: MfaService;
  oauth: OAuthService;
  tokens: TokenService;
  products: ProductService;
  customers: CustomerService;
  devices: Devices;
  claims: ClaimService;
  deviceCalls: DeviceCallService;
  events: EventService;
  config: Configuration;
  webhooks: Webhooks;
  firmware: Firmware;
  /** The updates' states in the store, for a product's update progress. */
  firmwareUpdates: Pick<FirmwareUpdates, 'counts'>;
  /** What GET /healthz checks and reports. */
  health: HealthDeps;
  metrics: Metrics;
  /** The node's counters of per-address limits (docs/security.md, "Limits on request volume"). */
  rateLimits: RateLimits;
  /** The device gateway's ports (known once it listens), for GET /v1/device_gateway. */
  gatewayPorts(): GatewayPorts;
  /** A pino logger options object, or false (tests). */
  logger?: FastifyServerOptions['logger'];
  /** When request and response schemas are compiled (compiled-schemas.ts): each on its route's first use by default. */
  compileSchemas?: CompileSchemas;
  version: string;
}

/** Builds the REST API without listening (tests inject requests; main.ts listens). */
export async function buildHttpApp(deps: HttpDeps): Promise<FastifyInstance> {
  const compilers = schemaCompilers(deps.compileSchemas ?? 'on-first-use');
  const app = Fastify({
    logger: deps.logger ?? loggerOptions(deps.settings),
    bodyLimit: deps.settings.bodyLimitBytes,
    trustProxy: trustedProxies(deps.settings.trustProxy),
    // requestIdOf reads a caller's x-request-id itself, keeping it only when it is sane.
    requestIdHeader: false,
    genReqId: requestIdOf,
    forceCloseConnections: 'idle',
    return503OnClosing: true,
    routerOptions: { ignoreTrailingSlash: true, maxParamLength: 500 },
    // Validators and serializers compiled once per schema (compiled-schemas.ts).
    schemaController: { compilersFactory: { buildSerializer: compilers.buildSerializer } },
    frameworkErrors: frameworkError,
    childLoggerFactory: lazyChildLogger,
    // One line per request instead of Fastify's two (logging.ts, logRequests).
    logController: new LogController({ disableRequestLogging: true }),
  });
  logRequests(app);

  app.setValidatorCompiler(compilers.validatorCompiler);

  // Both hooks (this and preValidation's below) are synchronous and take `done`: they run on every
  // request, and a callback hook costs Fastify less than a promise. This one comes before CORS's,
  // which answers a preflight from its own hook, so that every answer carries the request id and
  // nosniff (src/http/security-headers.ts).
  app.addHook('onRequest', (req, reply, done) => {
    stampRequestId(req, reply);
    noSniff(reply);
    done();
  });
  await allowListedOrigins(app, deps.settings.corsOrigins);
  await app.register(formbody, { bodyLimit: deps.settings.bodyLimitBytes });
  await app.register(swagger, {
    openapi: {
      openapi: '3.0.3',
      info: { title: 'Skyport API', version: deps.version, description: "Skyport's REST API, in Particle's cloud wire format. Errors: docs/errors.md." },
      components: {
        securitySchemes: {
          bearer: { type: 'http', scheme: 'bearer' },
          clientBasic: { type: 'http', scheme: 'basic' },
        },
      },
      security: [{ bearer: [] }],
    },
    // Shared schemas keep their own names in the document (`Error`, `Device`), not `def-<n>`.
    refResolver: { buildLocalReference: (json, _baseUri, _fragment, i) => (typeof json.$id === 'string' ? json.$id : `def-${i}`) },
  });
  app.addSchema(ErrorBody);
  // A gateway node holds device connections; its HTTP port serves probes and scrapes only
  // (docs/operations.md, "Roles"), and says so to whatever else reaches it.
  const gatewayOnly = deps.settings.role === 'gateway';
  const withConsole = !gatewayOnly && consoleBuilt();
  installErrorHandling(app, gatewayOnly ? notServedHere : withConsole ? null : routeNotFound);
  app.decorateRequest('auth', null);

  // PostgreSQL text cannot hold NUL, and jsonb refuses a lone UTF-16 surrogate (\ud800); refuse
  // both at the edge instead of failing in storage.
  app.addHook('preValidation', (req, _reply, done) => {
    if (containsNul(req.body) || containsNul(req.query) || containsNul(req.params)) {
      done(new DomainError('invalid_request', 'Text fields must not contain NUL characters'));
    } else if (containsLoneSurrogate(req.body) || containsLoneSurrogate(req.query) || containsLoneSurrogate(req.params)) {
      done(new DomainError('invalid_request', 'Text fields must be valid Unicode (a lone surrogate such as \\ud800 is not)'));
    } else {
      done();
    }
  });

  // Before any route: every request counts against the per-address limits (rate-limits.ts).
  const limits = await requestLimits(app, { limits: deps.rateLimits, settings: deps.settings, metrics: deps.metrics });
  metricsRoutes(app, deps.metrics, deps.settings);
  const guard = createGuard(deps.tokens);
  healthRoutes(app, deps.health);
  if (gatewayOnly) {
    await app.ready();
    return app;
  }
  oauthRoutes(app, { oauth: deps.oauth, clients: deps.clients });
  oauthMetadataRoutes(app, { grantTypes: deps.oauth.grantTypes, publicUrl: deps.settings.publicUrl });
  accessTokenRoutes(app, { tokens: deps.tokens, audit: deps.audit, guard });
  gatewayRoutes(app, { ports: deps.gatewayPorts, publicUrl: deps.settings.publicUrl, guard });
  userRoutes(app, { accounts: deps.accounts, mfa: deps.mfa, audit: deps.audit, guard });
  clientRoutes(app, { clients: deps.clients, guard });
  productRoutes(app, { products: deps.products, guard });
  deviceRoutes(app, { devices: deps.devices, deviceCalls: deps.deviceCalls, claims: deps.claims, products: deps.products, guard });
  deviceCallRoutes(app, { devices: deps.devices.access, deviceCalls: deps.deviceCalls, guard });
  const streams = eventStreams(app, deps.events, deps.settings.eventsKeepaliveSeconds, limits.openStream);
  eventRoutes(app, { events: deps.events, devices: deps.devices.access, streams, guard });
  webhookRoutes(app, { webhooks: deps.webhooks, devices: deps.devices.access, guard, publicUrl: deps.settings.publicUrl });
  // Shared schemas of the product scope's routes, named in the OpenAPI document.
  app.addSchema(FirmwareViewSchema);
  app.addSchema(GroupViewSchema);
  app.addSchema(RolloutViewSchema);
  // Everything under /v1/products/:productIdOrSlug: the product is resolved once per request.
  productScope(app, deps.products, (scope) => {
    productTeamRoutes(scope, { products: deps.products, guard });
    productClientRoutes(scope, { clients: deps.clients, guard });
    customerRoutes(scope, { customers: deps.customers, clients: deps.clients, products: deps.products, guard });
    productDeviceRoutes(scope, { devices: deps.devices, deviceCalls: deps.deviceCalls, claims: deps.claims, firmware: deps.firmware, guard });
    productDeviceCallRoutes(scope, { devices: deps.devices.access, deviceCalls: deps.deviceCalls, guard });
    productEventRoutes(scope, { events: deps.events, devices: deps.devices.access, streams, guard });
    configRoutes(scope, { config: deps.config, devices: deps.devices.access, guard });
    productWebhookRoutes(scope, { webhooks: deps.webhooks, devices: deps.devices.access, guard, publicUrl: deps.settings.publicUrl });
    firmwareRoutes(scope, { firmware: deps.firmware, updates: deps.firmwareUpdates, guard });
    groupRoutes(scope, { firmware: deps.firmware, guard });
    rolloutRoutes(scope, { firmware: deps.firmware, guard });
  });

  app.get('/v1/openapi.json', { schema: { hide: true } }, async () => app.swagger());
  if (withConsole) await consolePages(app);
  await app.ready();
  return app;
}

/** Fastify's `trustProxy`: the proxies TRUST_PROXY names, by the rule the device gateway applies too (platform/proxies.ts). */
function trustedProxies(entries: readonly string[]): FastifyServerOptions['trustProxy'] {
  const trusted = proxyTrust(entries);
  return trusted === null ? false : (address: string) => trusted(address);
}

function notServedHere(req: FastifyRequest, reply: FastifyReply): FastifyReply {
  return sendError(reply, new DomainError('misdirected_request', `This node runs with --role gateway: it holds device connections and serves only GET /healthz and GET /metrics over HTTP. Send ${req.method} ${req.url.split('?')[0]} to a node with role all or api`), req.id);
}

function containsNul(value: unknown): boolean {
  return someText(value, (t) => t.includes('\u0000'));
}

function containsLoneSurrogate(value: unknown): boolean {
  return someText(value, (t) => LONE_SURROGATE.test(t));
}

/** Whether any string in a parsed body, query or params (keys included) matches. */
function someText(value: unknown, test: (text: string) => boolean, depth = 0): boolean {
  if (typeof value === 'string') return test(value);
  if (depth > 20 || value === null || typeof value !== 'object') return false;
  // for…in rather than Object.entries: this runs on every request, mostly over empty objects.
  for (const k in value) {
    if (!Object.hasOwn(value, k)) continue;
    if (test(k) || someText((value as Record<string, unknown>)[k], test, depth + 1)) return true;
  }
  return false;
}
