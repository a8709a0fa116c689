import { Command } from 'commander';
import { loadSettings, SettingsError } from '../config/settings.js';
import { VERSION } from '../version.js';
import { registerServerCommands } from './commands/server.js';
import { registerUserCommands } from './commands/user.js';
import { registerSimCommand } from './commands/sim.js';
import { registerSchemaCommands } from './commands/schema.js';
import { registerAuthCommands } from './commands/auth.js';
import { registerTokenCommands } from './commands/tokens.js';
import { registerClientCommands } from './commands/clients.js';
import { registerProductCommands } from './commands/products.js';
import { registerCustomerCommands } from './commands/customers.js';
import { registerDeviceCommands } from './commands/devices.js';
import { registerEventCommands } from './commands/events.js';
import { registerConfigCommands } from './commands/config.js';
import { registerWebhookCommands } from './commands/webhooks.js';
import { registerRolloutCommands } from './commands/rollouts.js';
import { registerFirmwareCommands } from './commands/firmware.js';
import { registerGroupCommands } from './commands/groups.js';
import { addGlobalOptions } from './lib/context.js';

/** `skyport`: the command line. Each command prints one clear line on stderr when it fails. */
export async function runCli(argv: readonly string[]): Promise<void> {
  const program = new Command('skyport')
    .description('Skyport, a self-hostable device cloud')
    .version(VERSION)
    .showHelpAfterError()
    .exitOverride();
  addGlobalOptions(program);
  registerServerCommands(program);
  registerAuthCommands(program);
  registerTokenCommands(program);
  registerClientCommands(program);
  registerProductCommands(program);
  registerCustomerCommands(program);
  registerUserCommands(program);
  registerSimCommand(program);
  registerDeviceCommands(program);
  registerEventCommands(program);
  registerConfigCommands(program);
  registerWebhookCommands(program);
  registerRolloutCommands(program);
  registerFirmwareCommands(program);
  registerGroupCommands(program);
  registerSchemaCommands(program);
  try {
    await program.parseAsync([...argv], { from: 'user' });
  } catch (err) {
    const e = err as { code?: string; exitCode?: number; message?: string };
    if (e.code === 'commander.helpDisplayed' || e.code === 'commander.version' || e.code === 'commander.help') return;
    if (typeof e.code === 'string' && e.code.startsWith('commander.')) {
      process.exitCode = e.exitCode ?? 1;
      return;
    }
    process.stderr.write(`skyport: ${err instanceof SettingsError || err instanceof Error ? err.message : String(err)}\n`);
    process.exitCode = 1;
  }
}

/** Settings from the environment plus the flags left over after a command's own options. */
export function settingsFrom(args: readonly string[]) {
  return loadSettings(process.env, args);
}
