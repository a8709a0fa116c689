import { test } from 'node:test';
import assert from 'node:assert/strict';
import { loadSettings, SettingsError } from '../src/config/settings.js';

test('defaults', () => {
  const s = loadSettings({});
  assert.equal(s.port, 8080);
  assert.equal(s.mqttPort, 1883);
  assert.equal(s.dataDir, './data');
  assert.equal(s.databaseUrl, undefined);
  assert.equal(s.signup, true);
  assert.equal(s.tokenLifetimeSeconds, 7776000);
});

test('environment, and flags over the environment in both forms', () => {
  assert.equal(loadSettings({ PORT: '9000' }).port, 9000);
  assert.equal(loadSettings({ PORT: '9000' }, ['--port', '9100']).port, 9100);
  assert.equal(loadSettings({}, ['--port=9200', '--signup', 'off']).signup, false);
  assert.equal(loadSettings({ DATABASE_URL: 'postgres://u@h/db' }).databaseUrl, 'postgres://u@h/db');
});

test('bad values stop with a message naming the setting', () => {
  const cases: Array<[Record<string, string>, string[], RegExp]> = [
    [{ PORT: 'abc' }, [], /PORT/],
    [{ PORT: '70000' }, [], /PORT must be between/],
    [{ SIGNUP: 'maybe' }, [], /SIGNUP must be on or off/],
    [{ LOG_LEVEL: 'loud' }, [], /LOG_LEVEL/],
    [{ DATABASE_URL: 'mysql://x' }, [], /DATABASE_URL/],
    [{}, ['--port', 'x'], /--port/],
    [{}, ['--bogus', '1'], /unknown option --bogus/],
    [{}, ['--port'], /--port needs a value/],
  ];
  for (const [env, argv, message] of cases) {
    assert.throws(() => loadSettings(env, argv), (err: unknown) => err instanceof SettingsError && message.test(err.message), `${JSON.stringify(env)} ${argv.join(' ')}`);
  }
});
