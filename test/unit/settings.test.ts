import { test } from 'node:test';
import assert from 'node:assert/strict';
import { loadSettings, SETTINGS, SettingsError } from '../../src/config/settings.js';

test('defaults', () => {
  const s = loadSettings({});
  assert.equal(s.host, '0.0.0.0');
  assert.equal(s.port, 8080);
  assert.equal(s.mqttPort, 1883);
  assert.equal(s.dataDir, './data');
  assert.equal(s.databaseUrl, undefined);
  assert.equal(s.databasePoolSize, 10, "pg's own pool size");
  assert.equal(s.signup, true);
  assert.equal(s.logLevel, 'info');
  assert.deepEqual(s.trustProxy, [], 'no proxy is believed unless named');
  assert.equal(s.rateLimitRequests, 10000, "Particle's limits by default");
  assert.equal(s.rateLimitEventStreams, 100);
  assert.equal(s.rateLimitOpenStreams, 100);
  assert.equal(s.rateLimitTokens, 100);
  assert.equal(s.rateLimitWindowSeconds, 300);
  assert.equal(s.tokenLifetimeSeconds, 7776000);
  assert.equal(s.refreshTokenLifetimeSeconds, 1209600);
  assert.equal(s.loginMaxFailures, 10);
  assert.equal(s.loginLockoutSeconds, 1800);
  assert.equal(s.ipMaxFailures, 100);
  assert.equal(s.ipFailureWindowSeconds, 300);
  assert.equal(s.bodyLimitBytes, 1048576);
  assert.equal(s.shutdownGraceSeconds, 10);
  assert.equal(s.tokenCacheSeconds, 30);
  assert.deepEqual(s.corsOrigins, [], 'no origin may call across origins unless listed');
  assert.equal(s.metrics, 'off');
  assert.ok(Object.isFrozen(s), 'settings are frozen');
  for (const spec of SETTINGS) assert.ok(spec.key in s, `${spec.env} has a value (or undefined) in the settings`);
});

test('values from the environment', () => {
  const s = loadSettings({
    HOST: '127.0.0.1', PORT: '9000', MQTT_PORT: '0', DATA_DIR: '/var/lib/skyport', DATABASE_URL: 'postgres://u@h/db',
    SIGNUP: 'off', LOG_LEVEL: 'WARN', TRUST_PROXY: '10.0.0.5, 10.0.1.0/24,LOOPBACK,2001:db8::/32', TOKEN_LIFETIME_SECONDS: '3600', LOGIN_MAX_FAILURES: '3',
    LOGIN_LOCKOUT_SECONDS: '60', IP_MAX_FAILURES: '5', BODY_LIMIT_BYTES: '2048', TOKEN_CACHE_SECONDS: '0',
  });
  assert.equal(s.host, '127.0.0.1');
  assert.equal(s.port, 9000);
  assert.equal(s.mqttPort, 0);
  assert.equal(s.dataDir, '/var/lib/skyport');
  assert.equal(s.databaseUrl, 'postgres://u@h/db');
  assert.equal(s.signup, false);
  assert.equal(s.logLevel, 'warn');
  assert.deepEqual(s.trustProxy, ['10.0.0.5', '10.0.1.0/24', 'loopback', '2001:db8::/32']);
  assert.equal(s.tokenLifetimeSeconds, 3600);
  assert.equal(s.loginMaxFailures, 3);
  assert.equal(s.loginLockoutSeconds, 60);
  assert.equal(s.ipMaxFailures, 5);
  assert.equal(s.bodyLimitBytes, 2048);
  assert.equal(s.tokenCacheSeconds, 0);
  assert.equal(loadSettings({ DATABASE_URL: 'postgresql://u:p@h:5433/db' }).databaseUrl, 'postgresql://u:p@h:5433/db');
  assert.equal(loadSettings({ PORT: '' }).port, 8080, 'an empty variable means the default');
  assert.deepEqual(loadSettings({ CORS_ORIGINS: 'https://app.example.com, http://localhost:3000 https://app.example.com/' }).corsOrigins, ['https://app.example.com', 'http://localhost:3000'], 'commas or spaces, duplicates once');
  for (const on of ['on', 'true', '1', 'yes', 'ON']) assert.equal(loadSettings({ SIGNUP: on }).signup, true, on);
  for (const off of ['off', 'false', '0', 'no']) assert.equal(loadSettings({ SIGNUP: off }).signup, false, off);
});

test('flags, in both forms, win over the environment', () => {
  assert.equal(loadSettings({ PORT: '9000' }, ['--port', '9100']).port, 9100);
  assert.equal(loadSettings({ PORT: '9000' }, ['--port=9000']).port, 9000);
  assert.equal(loadSettings({}, ['--port=9200']).port, 9200);
  const s = loadSettings({ SIGNUP: 'on', LOG_LEVEL: 'debug' }, ['--signup', 'off', '--log-level=error', '--database-url', 'postgres://a@b/c']);
  assert.equal(s.signup, false);
  assert.equal(s.logLevel, 'error');
  assert.equal(s.databaseUrl, 'postgres://a@b/c');
  assert.equal(loadSettings({}, ['--data-dir=/tmp/a=b']).dataDir, '/tmp/a=b', 'only the first = splits');
  for (const spec of SETTINGS) {
    if (spec.default === undefined) continue;
    assert.doesNotThrow(() => loadSettings({}, [spec.flag, spec.default as string]), `${spec.flag} takes its default value`);
  }
});

test('bad values stop with a SettingsError naming the setting', () => {
  const cases: Array<[Record<string, string>, string[], RegExp]> = [
    [{ PORT: 'abc' }, [], /^PORT must be a whole number, got "abc"$/],
    [{ PORT: '70000' }, [], /^PORT must be between 0 and 65535, got 70000$/],
    [{ PORT: '-1' }, [], /^PORT must be a whole number/],
    [{ PORT: '80.5' }, [], /^PORT must be a whole number/],
    [{ MQTT_PORT: '1e3' }, [], /^MQTT_PORT/],
    [{ SIGNUP: 'maybe' }, [], /^SIGNUP must be on or off, got "maybe"$/],
    [{ TRUST_PROXY: '2' }, [], /^TRUST_PROXY must name proxies by address or CIDR range, separated by commas .*"2" is none of these$/],
    [{ TRUST_PROXY: '10.0.0.0/33' }, [], /^TRUST_PROXY must name proxies.*"10.0.0.0\/33" is none of these$/],
    [{ TRUST_PROXY: '10.0.0.1,proxy.example.com' }, [], /^TRUST_PROXY must name proxies.*"proxy.example.com" is none of these$/],
    [{ TRUST_PROXY: '::1/129' }, [], /^TRUST_PROXY must name proxies/],
    [{ TRUST_PROXY: '10.0.0.1/8/8' }, [], /^TRUST_PROXY must name proxies/],
    [{ RATE_LIMIT_REQUESTS: '-1' }, [], /^RATE_LIMIT_REQUESTS must be a whole number, got "-1"$/],
    [{ RATE_LIMIT_EVENT_STREAMS: 'many' }, [], /^RATE_LIMIT_EVENT_STREAMS must be a whole number/],
    [{ RATE_LIMIT_OPEN_STREAMS: '1.5' }, [], /^RATE_LIMIT_OPEN_STREAMS must be a whole number/],
    [{ RATE_LIMIT_TOKENS: '2000000000' }, [], /^RATE_LIMIT_TOKENS must be between 0 and 1000000000/],
    [{ RATE_LIMIT_WINDOW_SECONDS: '0' }, [], /^RATE_LIMIT_WINDOW_SECONDS must be between 1 and 86400, got 0$/],
    [{ LOG_LEVEL: 'loud' }, [], /^LOG_LEVEL must be one of fatal, error, warn, info, debug, trace, silent, got "loud"$/],
    [{ DATABASE_URL: 'mysql://x' }, [], /^DATABASE_URL must be a postgres:\/\/ or postgresql:\/\/ URL$/],
    [{ DATABASE_URL: 'postgres://[bad' }, [], /^DATABASE_URL is not a valid URL$/],
    [{ DATABASE_POOL_SIZE: '3' }, [], /^DATABASE_POOL_SIZE must be between 4 and 1000, got 3$/],
    [{ DATABASE_POOL_SIZE: 'ten' }, [], /^DATABASE_POOL_SIZE must be a whole number, got "ten"$/],
    [{}, ['--database-pool-size=1001'], /^--database-pool-size must be between 4 and 1000, got 1001$/],
    [{ TOKEN_LIFETIME_SECONDS: '0' }, [], /^TOKEN_LIFETIME_SECONDS must be between/],
    [{ LOGIN_MAX_FAILURES: '0' }, [], /^LOGIN_MAX_FAILURES must be between/],
    [{ BODY_LIMIT_BYTES: '10' }, [], /^BODY_LIMIT_BYTES must be between/],
    [{ CORS_ORIGINS: '*' }, [], /^CORS_ORIGINS lists origins one by one/],
    [{ METRICS: 'public' }, [], /^METRICS must be off, open or token, got "public"$/],
    [{ METRICS: 'token' }, [], /^METRICS=token needs METRICS_TOKEN$/],
    [{ METRICS: 'token', METRICS_TOKEN: 'short' }, [], /^METRICS_TOKEN must be at least 32 characters long$/],
    [{ CORS_ORIGINS: 'https://a.example.com/app' }, [], /^CORS_ORIGINS must be an origin alone/],
    [{ CORS_ORIGINS: 'app.example.com' }, [], /^CORS_ORIGINS must be a URL/],
    [{}, ['--port', 'x'], /^--port must be a whole number/],
    [{ PORT: '9000' }, ['--port=70000'], /^--port must be between/],
  ];
  for (const [env, argv, message] of cases) {
    const label = `${JSON.stringify(env)} ${argv.join(' ')}`;
    assert.throws(() => loadSettings(env, argv), (err: unknown) => {
      assert.ok(err instanceof SettingsError, `${label}: a SettingsError`);
      assert.match(err.message, message, label);
      return true;
    }, label);
  }
  assert.equal(loadSettings({ PORT: 'abc' }, ['--port', '9000']).port, 9000, 'a flag replaces a bad variable, which is not read');
});

test('TRUST_PROXY=on (any sender) is refused at start with one line that says what to write instead; off names no proxy; each limit takes 0 (off)', () => {
  for (const on of ['on', 'ON', 'true', 'yes', '1']) {
    assert.throws(() => loadSettings({ TRUST_PROXY: on }), (err: unknown) => {
      assert.ok(err instanceof SettingsError, on);
      assert.match(err.message, new RegExp(`^TRUST_PROXY=${on} \\(believe any sender's X-Forwarded-For\\) is refused: .* name your proxies instead, such as TRUST_PROXY=10\\.0\\.0\\.5,10\\.0\\.1\\.0/24 \\(or loopback for a proxy on this machine\\)$`), on);
      assert.ok(!err.message.includes('\n'), 'one line');
      return true;
    }, on);
  }
  assert.throws(() => loadSettings({}, ['--trust-proxy', 'on']), /^SettingsError: --trust-proxy=on \(believe any sender's X-Forwarded-For\) is refused/);
  for (const off of ['off', 'OFF', 'no', 'false', '0', '']) assert.deepEqual(loadSettings({ TRUST_PROXY: off }).trustProxy, [], off);
  assert.deepEqual(loadSettings({ TRUST_PROXY: '10.0.0.5,10.0.0.5' }).trustProxy, ['10.0.0.5'], 'duplicates once');
  const off = loadSettings({ RATE_LIMIT_REQUESTS: '0', RATE_LIMIT_EVENT_STREAMS: '0', RATE_LIMIT_OPEN_STREAMS: '0', RATE_LIMIT_TOKENS: '0', RATE_LIMIT_WINDOW_SECONDS: '60' });
  assert.deepEqual([off.rateLimitRequests, off.rateLimitEventStreams, off.rateLimitOpenStreams, off.rateLimitTokens, off.rateLimitWindowSeconds], [0, 0, 0, 0, 60]);
});

test('unknown and malformed flags are rejected', () => {
  const cases: Array<[string[], RegExp]> = [
    [['--bogus', '1'], /^unknown option --bogus/],
    [['--bogus=1'], /^unknown option --bogus/],
    [['--PORT', '9000'], /^unknown option --PORT/],
    [['--port'], /^option --port needs a value$/],
    [['--port', '--signup', 'off'], /^option --port needs a value$/],
    [['9000'], /^unexpected argument "9000"$/],
    [['-p', '9000'], /^unexpected argument "-p"$/],
  ];
  for (const [argv, message] of cases) {
    assert.throws(() => loadSettings({}, argv), (err: unknown) => err instanceof SettingsError && message.test(err.message), argv.join(' '));
  }
});

test('cluster mode: NATS_URL with PostgreSQL, roles, node ids; the embedded store or a role without NATS is a clear start-up error', () => {
  const s = loadSettings({ DATABASE_URL: 'postgres://u@h/db', NATS_URL: 'nats://10.0.0.5:4222,nats://10.0.0.6:4222', ROLE: 'Gateway', NODE_ID: 'gw-1', NODE_LEASE_SECONDS: '6' });
  assert.equal(s.natsUrl, 'nats://10.0.0.5:4222,nats://10.0.0.6:4222');
  assert.equal(s.role, 'gateway');
  assert.equal(s.nodeId, 'gw-1');
  assert.equal(s.nodeLeaseSeconds, 6);
  assert.equal(loadSettings({}).role, 'all');
  const refused = (env: Record<string, string>, message: RegExp) => assert.throws(() => loadSettings(env), (err: unknown) => err instanceof SettingsError && message.test(err.message));
  refused({ NATS_URL: 'nats://127.0.0.1:4222' }, /NATS_URL \(cluster mode\) needs DATABASE_URL/);
  refused({ ROLE: 'api' }, /--role api needs NATS_URL/);
  refused({ ROLE: 'broker' }, /ROLE must be all, api or gateway, got "broker"/);
  refused({ DATABASE_URL: 'postgres://u@h/db', NATS_URL: 'http://x:4222' }, /NATS_URL must be nats:\/\/host:port/);
  refused({ NODE_ID: 'a node' }, /NODE_ID must be 1-40 letters, digits or dashes/);
  refused({ NODE_LEASE_SECONDS: '1' }, /NODE_LEASE_SECONDS must be between 3 and 300/);
});
