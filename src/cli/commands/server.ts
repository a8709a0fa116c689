import type { Command } from 'commander';
import { settingsFrom } from '../main.js';
import { briefRun } from '../lib/brief-run.js';
import { checkPorts } from '../../platform/ports.js';

// The server's modules are loaded by the commands that need them, so that other commands
// (schema merge, sim) start without loading the whole cloud.

export function registerServerCommands(program: Command): void {
  const server = program.command('server').description('run and maintain the cloud');

  server.command('start')
    .description('start the cloud (settings: environment or flags, docs/configuration.md)')
    .allowUnknownOption()
    .allowExcessArguments()
    .action(async (_opts, cmd: Command) => {
      const settings = settingsFrom(cmd.args);
      // A port in use is said before the store is touched (a new data directory is not begun).
      await checkPorts(settings);
      // The embedded store's thread starts PostgreSQL while this thread loads the cloud's modules:
      // a restart serves about a tenth sooner (docs/benchmarks.md, "Restart storms").
      // startServer takes it over, failure included.
      const opening = settings.databaseUrl ? undefined : import('../../storage/embedded.js').then((m) => m.openEmbedded(settings.dataDir));
      opening?.catch(() => undefined);
      const { exitOnSignals, startServer } = await import('../../server.js');
      const { skyport, url, mqttUrl, wsUrl } = await startServer(settings, opening);
      const store = settings.databaseUrl ? 'PostgreSQL' : `embedded store in ${settings.dataDir}`;
      // Each role prints what it serves (docs/operations.md, "Roles"): a gateway node's HTTP port answers probes only.
      const http = settings.role === 'gateway' ? `  health   ${url}/healthz\n` : `  API      ${url}\n  OpenAPI  ${url}/v1/openapi.json\n`;
      const cluster = settings.natsUrl ? `  node     ${skyport.bus.nodeId} (role ${settings.role})\n` : '';
      process.stdout.write(`Skyport is running\n${http}${mqttUrl ? `  MQTT     ${mqttUrl}\n` : ''}${wsUrl ? `  MQTT/WS  ${wsUrl}\n` : ''}${cluster}  storage  ${store}\n  sign-up  ${settings.signup ? 'open' : 'closed'}\n`);
      exitOnSignals(skyport, settings.shutdownGraceSeconds);
    });

  server.command('migrate')
    .description('apply pending storage migrations and exit')
    .allowUnknownOption()
    .allowExcessArguments()
    .action(async (_opts, cmd: Command) => {
      const settings = settingsFrom(cmd.args);
      briefRun();
      const [{ openStorage }, { loadMigrations }] = await Promise.all([import('../../main.js'), import('../../storage/migrate.js')]);
      const db = await openStorage(settings);
      await db.close();
      const newest = loadMigrations().at(-1);
      process.stdout.write(`storage is at schema version ${newest?.version ?? 0} (${newest?.name ?? 'empty'})\n`);
    });
}
