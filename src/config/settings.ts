import { addressEntry } from '../platform/address-list.js';
import { proxyEntry } from '../platform/proxies.js';

/**
 * Settings: one table, read once at start from the environment and command-line flags (flags
 * win), validated, frozen and passed down. docs/configuration.md is generated from this table
 * (`npm run docs:config`), and a test fails when the two drift apart.
 */
export interface Settings {
  readonly host: string;
  readonly port: number;
  readonly mqttPort: number;
  readonly dataDir: string;
  readonly databaseUrl: string | undefined;
  readonly databaseConnectTimeoutSeconds: number;
  readonly databaseQueryTimeoutSeconds: number;
  readonly databasePoolSize: number;
  readonly signup: boolean;
  readonly logLevel: 'fatal' | 'error' | 'warn' | 'info' | 'debug' | 'trace' | 'silent';
  /** The reverse proxies believed in X-Forwarded-For (addresses, CIDR ranges, `loopback`); empty: none. */
  readonly trustProxy: readonly string[];
  readonly publicUrl: string | undefined;
  readonly tokenLifetimeSeconds: number;
  readonly refreshTokenLifetimeSeconds: number;
  readonly loginMaxFailures: number;
  readonly loginLockoutSeconds: number;
  readonly ipMaxFailures: number;
  readonly ipFailureWindowSeconds: number;
  readonly bodyLimitBytes: number;
  readonly shutdownGraceSeconds: number;
  readonly tokenCacheSeconds: number;
  readonly claimCodeLifetimeSeconds: number;
  readonly mqttTlsCert: string | undefined;
  readonly mqttTlsKey: string | undefined;
  readonly mqttWsPort: number | undefined;
  readonly deviceCallTimeoutSeconds: number;
  readonly eventsKeepaliveSeconds: number;
  readonly corsOrigins: readonly string[];
  readonly metrics: 'off' | 'open' | 'token';
  readonly metricsToken: string | undefined;
  readonly natsUrl: string | undefined;
  readonly role: 'all' | 'api' | 'gateway';
  readonly nodeId: string | undefined;
  readonly nodeLeaseSeconds: number;
  readonly rateLimitRequests: number;
  readonly rateLimitEventStreams: number;
  readonly rateLimitOpenStreams: number;
  readonly rateLimitTokens: number;
  readonly rateLimitWindowSeconds: number;
  /** Addresses and ranges webhooks may send to although they are loopback, private or link-local. */
  readonly webhookAllowPrivate: readonly string[];
  readonly webhookLeaseSeconds: number;
  readonly webhookConcurrency: number;
  readonly webhookHostConcurrency: number;
  readonly webhookTimeoutSeconds: number;
  /** The largest product firmware image an upload takes. */
  readonly firmwareMaxBytes: number;
  readonly firmwareTransfers: number;
  readonly firmwareUpdateTimeoutSeconds: number;
  readonly firmwareRolloutTickSeconds: number;
}

export class SettingsError extends Error {
  constructor(message: string) {
    super(message);
    this.name = 'SettingsError';
  }
}

interface SettingSpec<K extends keyof Settings> {
  key: K;
  env: string;
  flag: string;
  default: string | undefined;
  doc: string;
  parse(raw: string, name: string): Settings[K];
}

function integer(min: number, max: number) {
  return (raw: string, name: string): number => {
    if (!/^\d+$/.test(raw.trim())) throw new SettingsError(`${name} must be a whole number, got "${raw}"`);
    const n = Number(raw.trim());
    if (n < min || n > max) throw new SettingsError(`${name} must be between ${min} and ${max}, got ${n}`);
    return n;
  };
}

/** The words a setting that is on or off takes, in any case. */
const ON = ['on', 'true', '1', 'yes'];
const OFF = ['off', 'false', '0', 'no'];

function onOff(raw: string, name: string): boolean {
  const v = raw.trim().toLowerCase();
  if (ON.includes(v)) return true;
  if (OFF.includes(v)) return false;
  throw new SettingsError(`${name} must be on or off, got "${raw}"`);
}

const text = (raw: string) => raw;

/** One of a few words, in any case: "must be a, b or c" otherwise. */
function oneOf<const T extends string>(values: readonly T[]) {
  const said = `${values.slice(0, -1).join(', ')} or ${values[values.length - 1]}`;
  return (raw: string, name: string): T => {
    const v = raw.trim().toLowerCase();
    if (!(values as readonly string[]).includes(v)) throw new SettingsError(`${name} must be ${said}, got "${raw}"`);
    return v as T;
  };
}

/** An origin (scheme, host, port) with no path, query or credentials; answered without a trailing slash. */
function origin(raw: string, name: string): string {
  let url: URL;
  try {
    url = new URL(raw.trim());
  } catch {
    throw new SettingsError(`${name} must be a URL such as https://skyport.example.com, got "${raw}"`);
  }
  if (url.protocol !== 'https:' && url.protocol !== 'http:') throw new SettingsError(`${name} must be an http:// or https:// URL, got "${raw}"`);
  if (url.pathname !== '/' || url.search !== '' || url.hash !== '' || url.username !== '' || url.password !== '') {
    throw new SettingsError(`${name} must be an origin alone (scheme, host and port), with no path, query or credentials, got "${raw}"`);
  }
  return url.origin;
}

/** A list of origins, separated by commas or spaces; empty for none. */
function origins(raw: string, name: string): readonly string[] {
  const list = raw.split(/[\s,]+/).filter((o) => o !== '');
  if (list.includes('*')) throw new SettingsError(`${name} lists origins one by one; "*" (any origin) is not accepted`);
  return Object.freeze([...new Set(list.map((o) => origin(o, name)))]);
}

/**
 * TRUST_PROXY: the proxies named one by one, or off. `on` (believe whoever sends the header) is
 * refused: with per-address limits, a client would choose the address it is counted under.
 */
function proxies(raw: string, name: string): readonly string[] {
  const v = raw.trim().toLowerCase();
  if (v === '' || OFF.includes(v)) return Object.freeze([]);
  if (ON.includes(v)) {
    throw new SettingsError(`${name}=${raw.trim()} (believe any sender's X-Forwarded-For) is refused: clients could choose the address their requests are counted under; name your proxies instead, such as ${name}=10.0.0.5,10.0.1.0/24 (or loopback for a proxy on this machine)`);
  }
  const list = v.split(',').map((e) => e.trim()).filter((e) => e !== '');
  const entries = list.map((e) => {
    const entry = proxyEntry(e);
    if (entry === null) throw new SettingsError(`${name} must name proxies by address or CIDR range, separated by commas (such as 10.0.0.5,10.0.1.0/24), or loopback, or be off; "${e}" is none of these`);
    return entry;
  });
  return Object.freeze([...new Set(entries)]);
}

/** WEBHOOK_ALLOW_PRIVATE: addresses (each allows itself alone) and CIDR ranges. */
function allowedAddresses(raw: string, name: string): readonly string[] {
  const list = raw.split(',').map((e) => e.trim()).filter((e) => e !== '');
  return Object.freeze([...new Set(list.map((e) => {
    const entry = addressEntry(e);
    if (entry === null) throw new SettingsError(`${name} lists addresses and CIDR ranges separated by commas (such as 127.0.0.1,10.1.0.0/16); "${e}" is neither`);
    return entry;
  }))]);
}

const LOG_LEVELS = ['fatal', 'error', 'warn', 'info', 'debug', 'trace', 'silent'] as const;

export const SETTINGS: ReadonlyArray<SettingSpec<keyof Settings>> = [
  { key: 'host', env: 'HOST', flag: '--host', default: '0.0.0.0', doc: 'Address the HTTP API and the device gateway bind to.', parse: text },
  { key: 'port', env: 'PORT', flag: '--port', default: '8080', doc: 'HTTP port of the REST API. 0 picks a free port.', parse: integer(0, 65535) },
  { key: 'mqttPort', env: 'MQTT_PORT', flag: '--mqtt-port', default: '1883', doc: 'MQTT port of the device gateway. 0 picks a free port.', parse: integer(0, 65535) },
  { key: 'dataDir', env: 'DATA_DIR', flag: '--data-dir', default: './data', doc: 'Folder of the embedded store (used when DATABASE_URL is not set).', parse: text },
  {
    key: 'databaseUrl', env: 'DATABASE_URL', flag: '--database-url', default: undefined,
    doc: 'PostgreSQL connection URL (postgres://user:pass@host:5432/db). When set, storage is PostgreSQL instead of the embedded store.',
    parse(raw, name) {
      if (!/^postgres(ql)?:\/\//.test(raw)) throw new SettingsError(`${name} must be a postgres:// or postgresql:// URL`);
      try {
        new URL(raw);
      } catch {
        throw new SettingsError(`${name} is not a valid URL`);
      }
      return raw;
    },
  },
  {
    key: 'databaseConnectTimeoutSeconds', env: 'DATABASE_CONNECT_TIMEOUT_SECONDS', flag: '--database-connect-timeout-seconds', default: '5',
    doc: 'PostgreSQL: how long a request waits for a connection (a free one of the pool, or a new one) before it answers 503 service_unavailable (docs/operations.md, "When the store goes away").',
    parse: integer(1, 300),
  },
  {
    key: 'databaseQueryTimeoutSeconds', env: 'DATABASE_QUERY_TIMEOUT_SECONDS', flag: '--database-query-timeout-seconds', default: '30',
    doc: 'PostgreSQL: how long a statement waits for the server\'s answer before its connection is dropped (the server rolls back what it had begun) and the request answers 503: a server or network gone silent does not hold requests for minutes. Migrations are not limited by it.',
    parse: integer(1, 3600),
  },
  {
    key: 'databasePoolSize', env: 'DATABASE_POOL_SIZE', flag: '--database-pool-size', default: '10',
    doc: 'PostgreSQL: the most connections this node opens to the database. The API\'s requests share them with the device gateway\'s batched writes and the background work; `skyport_storage_connections` and `skyport_storage_waiting` (GET /metrics) show whether statements wait for one. At least 4, the smallest pool the whole suite runs on; size PostgreSQL\'s `max_connections` above the nodes\' pools added up (docs/operations.md, "Sizing").',
    parse: integer(4, 1000),
  },
  { key: 'signup', env: 'SIGNUP', flag: '--signup', default: 'on', doc: 'Open sign-up through POST /v1/users: on or off. With off, create accounts with `skyport user create`.', parse: onOff },
  {
    key: 'logLevel', env: 'LOG_LEVEL', flag: '--log-level', default: 'info', doc: `Log level: ${LOG_LEVELS.join(', ')}.`,
    parse(raw, name) {
      const v = raw.trim().toLowerCase();
      if (!(LOG_LEVELS as readonly string[]).includes(v)) throw new SettingsError(`${name} must be one of ${LOG_LEVELS.join(', ')}, got "${raw}"`);
      return v as Settings['logLevel'];
    },
  },
  {
    key: 'trustProxy', env: 'TRUST_PROXY', flag: '--trust-proxy', default: 'off',
    doc: 'The reverse proxies you run in front of Skyport, whose X-Forwarded-For (and X-Forwarded-Proto and -Host) are believed: addresses and CIDR ranges separated by commas, such as 10.0.0.5,10.0.1.0/24, or loopback for a proxy on the same machine. A request\'s address (what per-address limits count, and the audit log records) is then the right-most address of X-Forwarded-For that is not one of them; the same rule applies to MQTT over WebSocket. off: the connection\'s own address. on (any sender) is refused (docs/operations.md, "Behind a reverse proxy").',
    parse: proxies,
  },
  {
    key: 'publicUrl', env: 'PUBLIC_URL', flag: '--public-url', default: undefined,
    doc: 'The URL clients reach the REST API at, an origin such as https://skyport.example.com: the `issuer` of the OAuth server metadata (GET /.well-known/oauth-authorization-server) and the base of the endpoints it names. Unset: each request\'s own scheme and Host (through a proxy named in TRUST_PROXY, X-Forwarded-Proto and X-Forwarded-Host). Set it behind a proxy that does not pass those on.',
    parse: origin,
  },
  { key: 'tokenLifetimeSeconds', env: 'TOKEN_LIFETIME_SECONDS', flag: '--token-lifetime-seconds', default: '7776000', doc: 'Lifetime of an access token when the request names none (90 days).', parse: integer(1, 10 * 365 * 86400) },
  { key: 'refreshTokenLifetimeSeconds', env: 'REFRESH_TOKEN_LIFETIME_SECONDS', flag: '--refresh-token-lifetime-seconds', default: '1209600', doc: 'Lifetime of a refresh token, counted from when its access token expires (14 days).', parse: integer(60, 10 * 365 * 86400) },
  { key: 'loginMaxFailures', env: 'LOGIN_MAX_FAILURES', flag: '--login-max-failures', default: '10', doc: 'Consecutive failed logins after which an account is locked out (and failed authentications after which a client is locked out for that address).', parse: integer(1, 1000) },
  { key: 'loginLockoutSeconds', env: 'LOGIN_LOCKOUT_SECONDS', flag: '--login-lockout-seconds', default: '1800', doc: 'How long a lock-out lasts (30 minutes).', parse: integer(1, 86400) },
  { key: 'ipMaxFailures', env: 'IP_MAX_FAILURES', flag: '--ip-max-failures', default: '100', doc: 'Failed logins and client authentications one source address may make within IP_FAILURE_WINDOW_SECONDS before it gets 429.', parse: integer(1, 1_000_000) },
  { key: 'ipFailureWindowSeconds', env: 'IP_FAILURE_WINDOW_SECONDS', flag: '--ip-failure-window-seconds', default: '300', doc: 'Window of IP_MAX_FAILURES (5 minutes).', parse: integer(1, 86400) },
  { key: 'bodyLimitBytes', env: 'BODY_LIMIT_BYTES', flag: '--body-limit-bytes', default: '1048576', doc: 'Largest request body accepted (1 MiB); larger bodies answer 413.', parse: integer(1024, 64 * 1024 * 1024) },
  { key: 'shutdownGraceSeconds', env: 'SHUTDOWN_GRACE_SECONDS', flag: '--shutdown-grace-seconds', default: '10', doc: 'On SIGTERM, how long in-flight requests may take before the server closes anyway.', parse: integer(0, 3600) },
  { key: 'tokenCacheSeconds', env: 'TOKEN_CACHE_SECONDS', flag: '--token-cache-seconds', default: '30', doc: 'How long verified access tokens, device records and fleet access for device routes are remembered in memory. A change drops them at once, on every node of a cluster; 0 turns the caches off.', parse: integer(0, 3600) },
  { key: 'mqttTlsCert', env: 'MQTT_TLS_CERT', flag: '--mqtt-tls-cert', default: undefined, doc: 'PEM certificate (chain) file of the device gateway. With MQTT_TLS_KEY, MQTT_PORT speaks MQTT over TLS.', parse: text },
  { key: 'mqttTlsKey', env: 'MQTT_TLS_KEY', flag: '--mqtt-tls-key', default: undefined, doc: 'PEM private key file that goes with MQTT_TLS_CERT.', parse: text },
  { key: 'mqttWsPort', env: 'MQTT_WS_PORT', flag: '--mqtt-ws-port', default: undefined, doc: 'When set, the device gateway also takes MQTT over WebSocket on this port (path /mqtt). 0 picks a free port.', parse: integer(0, 65535) },
  { key: 'deviceCallTimeoutSeconds', env: 'DEVICE_CALL_TIMEOUT_SECONDS', flag: '--device-call-timeout-seconds', default: '10', doc: 'How long a function call or variable read waits for the device before answering 408; a `timeout` parameter overrides it per call.', parse: integer(1, 300) },
  { key: 'eventsKeepaliveSeconds', env: 'EVENTS_KEEPALIVE_SECONDS', flag: '--events-keepalive-seconds', default: '5', doc: 'Interval of the keep-alive comment on event streams (particle-api-js drops a stream silent for 15 s).', parse: integer(1, 10) },
  {
    key: 'corsOrigins', env: 'CORS_ORIGINS', flag: '--cors-origins', default: '',
    doc: 'Origins of browser apps allowed to call the REST API from their own pages (CORS), separated by commas, such as https://app.example.com. Empty (the default): none, and no CORS header at all; the console, served by the API itself, needs none.',
    parse: origins,
  },
  {
    key: 'metrics', env: 'METRICS', flag: '--metrics', default: 'off',
    doc: 'GET /metrics, the node\'s Prometheus metrics (docs/operations.md, "Metrics"): off (no such route), open (anyone who reaches the port), or token (Authorization: Bearer METRICS_TOKEN).',
    parse: oneOf(['off', 'open', 'token']),
  },
  {
    key: 'metricsToken', env: 'METRICS_TOKEN', flag: '--metrics-token', default: undefined,
    doc: 'The bearer token of GET /metrics with METRICS=token: at least 32 characters (for example `openssl rand -hex 32`).',
    parse(raw, name) {
      if (raw.length < 32) throw new SettingsError(`${name} must be at least 32 characters long`);
      return raw;
    },
  },
  {
    key: 'natsUrl', env: 'NATS_URL', flag: '--nats-url', default: undefined,
    doc: 'Cluster mode (docs/operations.md, "Cluster mode"): the NATS server or servers, separated by commas (nats://10.0.0.5:4222,nats://10.0.0.6:4222), through which nodes reach each other. Needs DATABASE_URL. Unset (the default): one node, with everything in its own process.',
    parse(raw, name) {
      for (const server of raw.split(',')) {
        const s = server.trim();
        if (!/^(nats|tls):\/\/[^\s/]+(:\d+)?\/?$/.test(s) && !/^[^\s/:]+:\d+$/.test(s)) throw new SettingsError(`${name} must be nats://host:port servers separated by commas, got "${s}"`);
      }
      return raw;
    },
  },
  {
    key: 'role', env: 'ROLE', flag: '--role', default: 'all',
    doc: 'What this node does in a cluster: all (the REST API and the device gateway), api (the REST API and event streams only) or gateway (device connections only; its HTTP port serves /healthz and /metrics). api and gateway need NATS_URL.',
    parse: oneOf(['all', 'api', 'gateway']),
  },
  {
    key: 'nodeId', env: 'NODE_ID', flag: '--node-id', default: undefined,
    doc: 'This node\'s name in the cluster, in logs, metrics and GET /healthz: letters, digits and dashes. Unset: the host name and a random suffix, new at each start.',
    parse(raw, name) {
      if (!/^[A-Za-z0-9-]{1,40}$/.test(raw)) throw new SettingsError(`${name} must be 1-40 letters, digits or dashes`);
      return raw;
    },
  },
  { key: 'nodeLeaseSeconds', env: 'NODE_LEASE_SECONDS', flag: '--node-lease-seconds', default: '15', doc: 'Cluster mode: a node that stops renewing its lease for this long is taken for dead, and its devices are marked offline (docs/operations.md, "Cluster mode").', parse: integer(3, 300) },
  {
    key: 'rateLimitRequests', env: 'RATE_LIMIT_REQUESTS', flag: '--rate-limit-requests', default: '10000',
    doc: 'Requests to the REST API one client address may make per RATE_LIMIT_WINDOW_SECONDS (Particle\'s limit); over it, 429 rate_limit_exceeded until the window ends. GET /healthz and GET /metrics are not counted. 0 turns the limit off (docs/security.md, "Limits on request volume").',
    parse: integer(0, 1_000_000_000),
  },
  {
    key: 'rateLimitEventStreams', env: 'RATE_LIMIT_EVENT_STREAMS', flag: '--rate-limit-event-streams', default: '100',
    doc: 'Event streams (GET …/events) one client address may open per RATE_LIMIT_WINDOW_SECONDS. 0 turns the limit off.',
    parse: integer(0, 1_000_000_000),
  },
  {
    key: 'rateLimitOpenStreams', env: 'RATE_LIMIT_OPEN_STREAMS', flag: '--rate-limit-open-streams', default: '100',
    doc: 'Event streams one client address may hold open at once, on all nodes of a cluster together. 0 turns the limit off.',
    parse: integer(0, 1_000_000_000),
  },
  {
    key: 'rateLimitTokens', env: 'RATE_LIMIT_TOKENS', flag: '--rate-limit-tokens', default: '100',
    doc: 'Token requests (POST /oauth/token, every grant, and customer creation with client credentials) and sign-ups (POST /v1/users) one client address may make per RATE_LIMIT_WINDOW_SECONDS. 0 turns the limit off.',
    parse: integer(0, 1_000_000_000),
  },
  {
    key: 'rateLimitWindowSeconds', env: 'RATE_LIMIT_WINDOW_SECONDS', flag: '--rate-limit-window-seconds', default: '300',
    doc: 'The window of RATE_LIMIT_REQUESTS, RATE_LIMIT_EVENT_STREAMS and RATE_LIMIT_TOKENS (5 minutes). Windows are aligned to the clock (they start at multiples of it since 1970), the same on every node.',
    parse: integer(1, 86400),
  },
  {
    key: 'webhookAllowPrivate', env: 'WEBHOOK_ALLOW_PRIVATE', flag: '--webhook-allow-private', default: '',
    doc: 'Loopback, private, link-local or metadata addresses webhooks may send to all the same (by default they are refused when a webhook is saved and again at every connection): addresses and CIDR ranges separated by commas. 127.0.0.1 allows that address alone, not the rest of 127.0.0.0/8 (docs/webhooks.md, "Safe by default").',
    parse: allowedAddresses,
  },
  { key: 'webhookLeaseSeconds', env: 'WEBHOOK_LEASE_SECONDS', flag: '--webhook-lease-seconds', default: '60', doc: 'How long a node holds a webhook delivery it took to send; a node that stops or dies without finishing has its deliveries taken by another after this long.', parse: integer(5, 3600) },
  { key: 'webhookTimeoutSeconds', env: 'WEBHOOK_TIMEOUT_SECONDS', flag: '--webhook-timeout-seconds', default: '20', doc: 'How long a webhook request may take, from connecting to the end of the answer, before the attempt counts as failed (20 s, as Particle).', parse: integer(1, 120) },
  { key: 'webhookConcurrency', env: 'WEBHOOK_CONCURRENCY', flag: '--webhook-concurrency', default: '256', doc: 'Webhook deliveries one node sends at once, at most.', parse: integer(1, 10000) },
  { key: 'webhookHostConcurrency', env: 'WEBHOOK_HOST_CONCURRENCY', flag: '--webhook-host-concurrency', default: '32', doc: 'Webhook deliveries one node sends to one destination host at once, at most: a slow host cannot take every slot.', parse: integer(1, 1000) },
  {
    key: 'firmwareMaxBytes', env: 'FIRMWARE_MAX_BYTES', flag: '--firmware-max-bytes', default: '8388608',
    doc: 'Largest product firmware binary an upload takes (8 MiB; a Device OS application is at most a few hundred KiB); larger uploads answer 413 (docs/firmware.md, "Limits"). Images are stored whole in the store, once per version.',
    parse: integer(1024, 64 * 1024 * 1024),
  },
  {
    key: 'firmwareTransfers', env: 'FIRMWARE_TRANSFERS', flag: '--firmware-transfers', default: '256',
    doc: 'Firmware transfers one node runs at once, at most; devices beyond it wait (their update `pending`) and start as transfers end (docs/device-protocol.md, "Firmware updates").',
    parse: integer(1, 100_000),
  },
  {
    key: 'firmwareUpdateTimeoutSeconds', env: 'FIRMWARE_UPDATE_TIMEOUT_SECONDS', flag: '--firmware-update-timeout-seconds', default: '600',
    doc: 'How long a device has, after it said it holds a new firmware image (`ota/done`), to come back running it; an update whose device is not back by then counts as failed (`no_return`), and as succeeded if it comes back on the new version later.',
    parse: integer(10, 7 * 86400),
  },
  {
    key: 'firmwareRolloutTickSeconds', env: 'FIRMWARE_ROLLOUT_TICK_SECONDS', flag: '--firmware-rollout-tick-seconds', default: '5',
    doc: 'How often staged rollouts advance (once per cluster: on the leader): each tick pauses a rollout whose error threshold is reached, starts its next wave once the success threshold is met, and starts its next devices up to its rate (docs/firmware.md, "Staged rollouts").',
    parse: integer(1, 3600),
  },
  { key: 'claimCodeLifetimeSeconds', env: 'CLAIM_CODE_LIFETIME_SECONDS', flag: '--claim-code-lifetime-seconds', default: '3600', doc: 'How long a claim code stays valid (1 hour); it is single use.', parse: integer(60, 30 * 86400) },
];

/**
 * Reads the settings from `env` and `argv` (flags such as `--port 9000` or `--port=9000`).
 * Throws SettingsError with a message naming the setting on the first bad value.
 */
export function loadSettings(env: Record<string, string | undefined>, argv: readonly string[] = []): Settings {
  const flags = parseFlags(argv);
  const out: Record<string, unknown> = {};
  for (const spec of SETTINGS) {
    const fromFlag = flags.get(spec.flag);
    const fromEnv = env[spec.env];
    const raw = fromFlag ?? (fromEnv === '' ? undefined : fromEnv) ?? spec.default;
    const name = fromFlag !== undefined ? spec.flag : spec.env;
    out[spec.key] = raw === undefined ? undefined : spec.parse(raw, name);
    flags.delete(spec.flag);
  }
  const unknown = [...flags.keys()];
  if (unknown.length > 0) throw new SettingsError(`unknown option ${unknown[0]} (see docs/configuration.md)`);
  if (out.metrics === 'token' && out.metricsToken === undefined) throw new SettingsError('METRICS=token needs METRICS_TOKEN');
  // The embedded store lives in one process's folder: no other node can share it.
  if (out.natsUrl !== undefined && out.databaseUrl === undefined) throw new SettingsError('NATS_URL (cluster mode) needs DATABASE_URL: the embedded store serves one node only');
  if (out.role !== 'all' && out.natsUrl === undefined) throw new SettingsError(`--role ${String(out.role)} needs NATS_URL: without a cluster, one node does everything (--role all)`);
  return Object.freeze(out) as unknown as Settings;
}

function parseFlags(argv: readonly string[]): Map<string, string> {
  const flags = new Map<string, string>();
  for (let i = 0; i < argv.length; i++) {
    const arg = argv[i] as string;
    if (!arg.startsWith('--')) throw new SettingsError(`unexpected argument "${arg}"`);
    const eq = arg.indexOf('=');
    if (eq > 0) {
      flags.set(arg.slice(0, eq), arg.slice(eq + 1));
    } else {
      const value = argv[i + 1];
      if (value === undefined || value.startsWith('--')) throw new SettingsError(`option ${arg} needs a value`);
      flags.set(arg, value);
      i++;
    }
  }
  return flags;
}

/** The settings table as Markdown, for docs/configuration.md. */
export function settingsMarkdown(): string {
  const rows = SETTINGS.map((s) => `| \`${s.env}\` | \`${s.flag}\` | ${s.default === undefined || s.default === '' ? '(unset)' : `\`${s.default}\``} | ${s.doc} |`);
  return ['| environment | flag | default | meaning |', '|---|---|---|---|', ...rows].join('\n');
}
