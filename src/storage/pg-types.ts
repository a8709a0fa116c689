// pg's type parsers (pg re-exports this package as pg.types; one copy, so both share the parsers),
// without the client: the embedded store needs the parsers and nothing else of pg.
import types from 'pg-types';

/**
 * How values come back from PostgreSQL's text format, for both adapters: the pg pool
 * (postgres.ts) and the embedded store (embedded.ts, which reads the same wire messages from
 * PGlite). One set of parsers, so a repository sees the same types on either store.
 */

// BIGINT (int8) columns as numbers: ids and counters here stay far below 2^53.
types.setTypeParser(20, (value) => Number(value));

const parseTimestamptzSlowly = types.getTypeParser(1184, 'text') as (text: string) => Date | string;

/**
 * timestamptz in a UTC session (`2026-11-23 20:45:36.379256+00`) is ISO 8601 but for the space
 * and the bare offset, and the engine parses ISO text faster than pg's general parser (a fleet
 * page has a hundred timestamps; docs/benchmarks.md, "Measurements behind design choices").
 * Any other form (another time zone, BC, infinity) goes to pg's parser.
 */
export function parseTimestamptz(text: string): Date | string {
  if (text.length >= 22 && text.length <= 29 && text.charCodeAt(10) === 32 && text.endsWith('+00')) {
    return new Date(`${text.slice(0, 10)}T${text.slice(11, -3)}Z`);
  }
  return parseTimestamptzSlowly(text);
}
types.setTypeParser(1184, parseTimestamptz);

/** The parser of a column of type `oid` in text format. */
export function textParser(oid: number): (text: string) => unknown {
  return types.getTypeParser(oid, 'text') as (text: string) => unknown;
}
