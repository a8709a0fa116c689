/**
 * One INSERT of a batch: its rows as one array per column, its parameters numbered from `first`,
 * so that several can share one statement as the parts of a data-modifying WITH.
 */
export interface BatchInsert { sql: (first: number) => string; params: unknown[] }

/** `SELECT * FROM unnest($first::type[], …)`: a batch's rows, one array per column, as the columns' types. */
export const unnestOf = (first: number, types: readonly string[]): string => `SELECT * FROM unnest(${types.map((t, i) => `$${first + i}::${t}[]`).join(', ')})`;

/**
 * The inserts as one statement: the last is the statement, the others run as the parts of its
 * WITH. All of it commits or none; no part reads another's rows.
 */
export function oneStatement(inserts: readonly BatchInsert[]): { sql: string; params: unknown[] } {
  const params: unknown[] = [];
  const statements = inserts.map((insert) => {
    const sql = insert.sql(params.length + 1);
    params.push(...insert.params);
    return sql;
  });
  const last = statements.pop();
  if (last === undefined) throw new Error('oneStatement: no insert');
  return { sql: statements.length === 0 ? last : `WITH ${statements.map((sql, i) => `w${i} AS (${sql})`).join(',\n')}\n${last}`, params };
}
