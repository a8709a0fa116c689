import { createInterface } from 'node:readline/promises';

/**
 * Asks a question on the terminal (stderr), without echo for secrets. When standard input is not
 * a terminal, answers come from its lines, in order, so scripts and tests can pipe them.
 */
let piped: AsyncIterator<string> | undefined;

export async function ask(question: string, options: { secret?: boolean } = {}): Promise<string> {
  if (!process.stdin.isTTY) {
    piped ??= createInterface({ input: process.stdin })[Symbol.asyncIterator]();
    const next = await piped.next();
    if (next.done) throw new Error(`no answer on standard input to "${question.trim()}"`);
    return next.value;
  }
  const rl = createInterface({ input: process.stdin, output: process.stderr, terminal: true });
  process.stderr.write(question);
  if (options.secret) (rl as unknown as { _writeToOutput?: (s: string) => void })._writeToOutput = () => undefined;
  const answer = await rl.question('');
  rl.close();
  if (options.secret) process.stderr.write('\n');
  return answer;
}

/** A password: from SKYPORT_PASSWORD when set, else asked. */
export async function password(question = 'Password: '): Promise<string> {
  return process.env.SKYPORT_PASSWORD ?? ask(question, { secret: true });
}
