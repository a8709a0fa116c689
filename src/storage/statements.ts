import { createHash } from 'node:crypto';

const names = new Map<string, string>();

/**
 * The name of a prepared statement (QueryOptions.prepare): derived from its text, so that each
 * connection prepares a statement once and two texts never share a name.
 */
export function statementName(text: string): string {
  let name = names.get(text);
  if (name === undefined) {
    name = `skyport_${createHash('sha256').update(text).digest('hex').slice(0, 24)}`;
    names.set(text, name);
  }
  return name;
}
