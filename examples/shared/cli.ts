/** The command line the three examples share. */
import { parseArgs } from 'node:util';

export interface CommonOptions {
  /** The cloud's REST API, without a trailing slash. */
  apiUrl: string;
  /** The device gateway the simulated devices connect to. */
  mqttUrl: string;
  /** A product owner's token; without it a developer account is signed up for the run. */
  ownerToken?: string;
  /** The product (id or slug) to use; without it a product is created. */
  product?: string;
}

export function parseCommonArgs(usage: string, argv = process.argv.slice(2)): CommonOptions {
  const { values } = parseArgs({
    args: argv,
    options: {
      'api-url': { type: 'string', default: process.env.SKYPORT_API_URL ?? 'http://127.0.0.1:8080' },
      'mqtt-url': { type: 'string', default: 'mqtt://127.0.0.1:1883' },
      token: { type: 'string' },
      product: { type: 'string' },
      help: { type: 'boolean', short: 'h', default: false },
    },
  });
  if (values.help) {
    console.log(usage);
    process.exit(0);
  }
  const token = values.token ?? process.env.SKYPORT_TOKEN;
  if (values.product !== undefined && !token) throw new Error('--product needs --token (or SKYPORT_TOKEN) of a member of its team');
  return {
    apiUrl: values['api-url'].replace(/\/+$/, ''),
    mqttUrl: values['mqtt-url'],
    ...(token ? { ownerToken: token } : {}),
    ...(values.product !== undefined ? { product: values.product } : {}),
  };
}

/** Runs `main`, printing a failure as one line and exiting 1. */
export function runMain(main: () => Promise<void>): void {
  main().then(() => process.exit(0), (err: unknown) => {
    // fetch says only "fetch failed"; the reason (ECONNREFUSED, ENOTFOUND) is its cause.
    const cause = err instanceof Error && err.cause instanceof Error ? ` (${err.cause.message})` : '';
    console.error(`failed: ${err instanceof Error ? err.message : String(err)}${cause}`);
    process.exit(1);
  });
}
