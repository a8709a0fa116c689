import type { Command } from 'commander';
import { settingsFrom } from '../main.js';
import { briefRun } from '../lib/brief-run.js';
import { password as readPassword } from '../lib/prompt.js';

export function registerUserCommands(program: Command): void {
  const user = program.command('user').description('user accounts');

  user.command('create')
    .description('create an account directly in storage, even when sign-up is closed (password from SKYPORT_PASSWORD, standard input, or a prompt)')
    .requiredOption('--username <email>', 'the e-mail address to log in with')
    .allowUnknownOption()
    .allowExcessArguments()
    .action(async (opts: { username: string }, cmd: Command) => {
      const settings = settingsFrom(cmd.args);
      const password = await readPassword();
      briefRun();
      const { createSkyport } = await import('../../main.js');
      const skyport = await createSkyport(settings, { logger: false });
      try {
        await skyport.services.accounts.bootstrap({ username: opts.username, password });
        process.stdout.write(`created user ${opts.username}\n`);
      } finally {
        await skyport.close();
      }
    });
}
