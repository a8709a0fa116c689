import { DatabaseError, serialize } from 'pg-protocol';
import { Parser } from 'pg-protocol/dist/parser.js';
import type { BackendMessage, CommandCompleteMessage, DataRowMessage, RowDescriptionMessage } from 'pg-protocol/dist/messages.js';
import { prepareValue } from 'pg/lib/utils.js';
import { textParser } from './pg-types.js';
import { parsingRowMaker, type ParsingMakeRow } from './rows.js';

/**
 * The embedded store speaks PostgreSQL's frontend/backend protocol to PGlite as pg speaks it to
 * a server: the main thread writes the messages of a statement, the store's thread hands them
 * to PostgreSQL and returns its answer as one buffer, and the main thread reads the rows with
 * pg's own parsers (pg-types.ts). PGlite's query() would instead decode every field into a
 * fresh ArrayBuffer and structured-clone the rows across threads, much of a fleet page's
 * time in the store's thread (docs/architecture.md, "PGlite's own thread").
 */

/**
 * One statement in the extended query protocol (PostgreSQL docs, "Extended Query", §55.2.3):
 * Parse, Bind with the parameters as text or bytes (pg's prepareValue), Describe, Execute, Sync.
 * A named statement (QueryOptions.prepare) is parsed once per session: the store's thread drops
 * the leading Parse when it has already sent one (withoutParse).
 */
export function statementMessage(text: string, params: readonly unknown[] | undefined, name = ''): Buffer {
  return Buffer.concat([
    serialize.parse({ name, text, types: [] }),
    serialize.bind({ statement: name, values: (params ?? []) as unknown[], valueMapper: prepareValue }),
    serialize.describe({ type: 'P', name: '' }),
    serialize.execute({ portal: '', rows: 0 }),
    serialize.sync(),
  ]);
}

/** A statement message without its leading Parse (a type byte and a length that counts itself). */
export function withoutParse(message: Uint8Array): Uint8Array {
  const length = new DataView(message.buffer, message.byteOffset, message.byteLength).getInt32(1);
  return message.subarray(1 + length);
}

/** Whether PostgreSQL's answer starts with ParseComplete: the statement is now prepared. */
export function startsParsed(answer: Uint8Array): boolean {
  return answer[0] === 0x31; // '1'
}

/** A script of statements without parameters, in the simple query protocol (§55.2.2). */
export function scriptMessage(text: string): Buffer {
  return serialize.query(text);
}

export interface StatementResult<Row> {
  rows: Row[];
  /** PostgreSQL's first error, as pg reports it (code, detail, constraint...). */
  error: DatabaseError | undefined;
  /** The last command tag, e.g. `COMMIT` or `ROLLBACK`. */
  command: string | undefined;
}

/** Reads PostgreSQL's answer to one message buffer: rows of the last row description. */
export function readResult<Row>(answer: Uint8Array): StatementResult<Row> {
  const bytes = Buffer.from(answer.buffer, answer.byteOffset, answer.byteLength);
  const out: StatementResult<Row> = { rows: [], error: undefined, command: undefined };
  let make: ParsingMakeRow = () => ({});
  let parsers: Array<(text: string) => unknown> = [];
  new Parser().parse(bytes, (message: BackendMessage) => {
    switch (message.name) {
      case 'rowDescription': {
        const fields = (message as RowDescriptionMessage).fields;
        make = parsingRowMaker(fields.map((f) => f.name));
        parsers = fields.map((f) => textParser(f.dataTypeID));
        out.rows = [];
        break;
      }
      case 'dataRow': {
        out.rows.push(make((message as DataRowMessage).fields as Array<string | null>, parsers) as Row);
        break;
      }
      case 'commandComplete': out.command = (message as CommandCompleteMessage).text.split(' ')[0]; break;
      case 'error': out.error ??= message as DatabaseError; break;
      default: break;
    }
  });
  return out;
}
