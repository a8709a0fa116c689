/**
 * The recommended design, by hand, against a running Skyport (`npm start`):
 *   npx tsx examples/recommended-backend/main.ts --api-url http://127.0.0.1:8080 --mqtt-url mqtt://127.0.0.1:1883
 * Without --token (or SKYPORT_TOKEN) it signs up a developer account and makes a product for
 * the run; with --token and --product it uses that product (and leaves a client and two device
 * identities in it). See README.md.
 */
import { parseCommonArgs, runMain } from '../shared/cli.js';
import { runRecommendedBackend } from './demo.js';

const USAGE = 'usage: npx tsx examples/recommended-backend/main.ts [--api-url URL] [--mqtt-url URL] [--token TOKEN] [--product ID|SLUG]';

runMain(async () => {
  const run = await runRecommendedBackend({ ...parseCommonArgs(USAGE), log: (line) => console.log(line) });
  await run.close();
  console.log('done: the back-end made every call; no customer, no customer token, no claim');
});
