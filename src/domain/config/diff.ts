/**
 * The differences between two JSON documents (configuration values or schemas), as a list of
 * changes each named by a JSON pointer (RFC 6901). Objects are compared key by key; arrays and
 * other values are compared whole, since a reordered `enum` or `required` is a change to show.
 */
export interface Change { path: string; op: 'add' | 'remove' | 'replace'; from?: unknown; to?: unknown }

const isObject = (v: unknown): v is Record<string, unknown> => typeof v === 'object' && v !== null && !Array.isArray(v);
const escape = (key: string) => key.replace(/~/g, '~0').replace(/\//g, '~1');
const same = (a: unknown, b: unknown) => JSON.stringify(a) === JSON.stringify(b);

export function diffJson(from: unknown, to: unknown, path = ''): Change[] {
  if (isObject(from) && isObject(to)) {
    const changes: Change[] = [];
    for (const [key, value] of Object.entries(from)) {
      const p = `${path}/${escape(key)}`;
      if (!(key in to)) changes.push({ path: p, op: 'remove', from: value });
      else changes.push(...diffJson(value, to[key], p));
    }
    for (const [key, value] of Object.entries(to)) if (!(key in from)) changes.push({ path: `${path}/${escape(key)}`, op: 'add', to: value });
    return changes;
  }
  return same(from, to) ? [] : [{ path, op: 'replace', from, to }];
}
