import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import { manualClock, startTestServer, type TestServer } from '../helpers/server.js';
import { cliHome, failedWith, skyport } from '../helpers/cli.js';
import { rolloutProduct } from '../helpers/rollouts.js';

/** The skyport CLI: `rollouts start|status|pause|resume|next|abort` (docs/cli.md). */
let server: TestServer;
before(async () => { server = await startTestServer({ clock: manualClock(new Date()), env: { FIRMWARE_ROLLOUT_TICK_SECONDS: '3600' } }); });
after(async () => { await server.close(); });

test('rollouts start with waves, a rate and thresholds; status of all and of one; pause with a reason, resume, next, abort; --json gives the API\'s answer', async () => {
  const p = await rolloutProduct(server.url, 4);
  const home = await cliHome();
  const env = { SKYPORT_TOKEN: p.token, SKYPORT_API_URL: server.url };
  const run = (...args: string[]) => skyport(args, { home, env });

  const started = await run('rollouts', 'start', '2', '--wave', '25%', '--wave', '1', '--rate', '10', '--success', '90', '--manual', '--error-count', '2', '--min-finished', '3', '--json');
  assert.equal(started.code, 0, started.stderr);
  const id = started.json.id as number;
  assert.deepEqual([started.json.state, started.json.rate_per_minute, started.json.success_threshold, started.json.advance, started.json.error_threshold],
    ['running', 10, 90, 'manual', { count: 2, percent: null, min_finished: 3 }]);
  assert.deepEqual(started.json.waves.map((w: { devices: number }) => w.devices), [1, 1, 2]);

  await server.skyport.services.firmware.rollouts.tick();
  const list = await run('rollouts', 'status');
  assert.equal(list.code, 0, list.stderr);
  assert.match(list.stdout, /^ID\s+VERSION\s+TARGET\s+STATE\s+WAVE\s+SUCCEEDED\s+FAILED\s+PENDING\s+NOT STARTED\s+CREATED$/m);
  assert.match(list.stdout, new RegExp(`^${id}\\s+2\\s+fleet\\s+running\\s+1/3\\s+0\\s+0\\s+1\\s+3\\s`, 'm'));
  const one = await run('rollouts', 'status', String(id));
  assert.equal(one.code, 0, one.stderr);
  assert.match(one.stdout, /^target\s+the fleet$/m);
  assert.match(one.stdout, /^error threshold\s+2 failures, once 3 finished$/m);
  assert.match(one.stdout, /^progress\s+3 not started, 1 pending$/m);
  assert.match(one.stdout, /^1\s+25%\s+1\s+current\s+0%\s+0\s+1\s+0\s+0\s+0\s+0\s+0$/m);
  assert.match(one.stdout, /^3\s+the rest\s+2\s+waiting\s/m);

  const paused = await run('rollouts', 'pause', String(id), '--reason', 'looking at logs');
  assert.equal(paused.code, 0, paused.stderr);
  assert.match(paused.stdout, /^state\s+paused: looking at logs$/m);
  failedWith(await run('rollouts', 'pause', String(id)), /Rollout \d+ is paused: only a running rollout can be paused/);
  assert.equal((await run('rollouts', 'resume', String(id))).code, 0);
  const next = await run('rollouts', 'next', String(id), '--json');
  assert.equal(next.json.current_wave, 2);
  const aborted = await run('rollouts', 'abort', String(id), '--json');
  assert.deepEqual([aborted.json.state, aborted.json.reason.code], ['aborted', 'aborted']);

  failedWith(await run('rollouts', 'start', '2', '--wave', 'lots'), /waves\[0\] must be a whole number/);
  failedWith(await run('rollouts', 'status', '99999'), /no rollout 99999/);
});
