import { createInterface } from 'node:readline/promises';
import type { Command } from 'commander';
import { settingsFrom } from '../main.js';

async function readPassword(): Promise<string> {
  if (process.env.SKYPORT_PASSWORD) return process.env.SKYPORT_PASSWORD;
  if (!process.stdin.isTTY) {
    // Piped: the first line of standard input.
    const rl = createInterface({ input: process.stdin });
    for await (const line of rl) {
      rl.close();
      return line;
    }
    throw new Error('no password on standard input');
  }
  const rl = createInterface({ input: process.stdin, output: process.stderr, terminal: true });
  const out = rl as unknown as { _writeToOutput?: (s: string) => void };
  process.stderr.write('Password: ');
  out._writeToOutput = () => undefined; // do not echo
  const answer = await rl.question('');
  rl.close();
  process.stderr.write('\n');
  return answer;
}

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
