/**
 * Row builders by column list, each compiled once (as pg's own result builder and Fastify's
 * serializer are): an object literal of fixed shape is made faster than one grown key by key
 * (docs/benchmarks.md, "Measurements behind design choices"), and a fleet page has 25 rows of 18
 * columns. Column names go in as JSON strings, so no name can inject code; a later column of the
 * same name wins, as in pg.
 */
export type ParsingMakeRow = (values: Array<string | null>, parsers: Array<(text: string) => unknown>) => Record<string, unknown>;
export type MakeRow = (values: unknown[]) => Record<string, unknown>;

const MAX_MAKERS = 1000;
const parsing = new Map<string, ParsingMakeRow>();
const plain = new Map<string, MakeRow>();

function compiled<F>(cache: Map<string, F>, names: string[], field: (name: string, i: number) => string, params: string[]): F {
  const key = names.join('\0');
  let make = cache.get(key);
  if (make === undefined) {
    make = new Function(...params, `return { ${names.map(field).join(', ')} };`) as F;
    if (cache.size < MAX_MAKERS) cache.set(key, make);
  }
  return make;
}

/** Builds a row from the fields' text, each read by its column's parser (the embedded store). */
export function parsingRowMaker(names: string[]): ParsingMakeRow {
  return compiled(parsing, names, (n, i) => `${JSON.stringify(n)}: v[${i}] === null ? null : p[${i}](v[${i}])`, ['v', 'p']);
}

/** Builds a row from values pg has already parsed (PostgreSQL, rowMode 'array'). */
export function rowMaker(names: string[]): MakeRow {
  return compiled(plain, names, (n, i) => `${JSON.stringify(n)}: v[${i}]`, ['v']);
}
