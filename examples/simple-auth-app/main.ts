/**
 * Simple authentication, by hand, against a running Skyport (`npm start`):
 *   npx tsx examples/simple-auth-app/main.ts --api-url http://127.0.0.1:8080 --mqtt-url mqtt://127.0.0.1:1883
 * Without --token (or SKYPORT_TOKEN) it signs up a developer account and makes a product for
 * the run; with --token and --product it uses that product. See README.md.
 */
import { parseCommonArgs, runMain } from '../shared/cli.js';
import { runSimpleAuthApp } from './demo.js';

const USAGE = 'usage: npx tsx examples/simple-auth-app/main.ts [--api-url URL] [--mqtt-url URL] [--token TOKEN] [--product ID|SLUG]';

runMain(async () => {
  const run = await runSimpleAuthApp({ ...parseCommonArgs(USAGE), log: (line) => console.log(line) });
  await run.close();
  console.log('done: the app set the lamp up and called it with the customer\'s token; another customer could not');
});
