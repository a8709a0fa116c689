// Preloaded into the Skyport server by `bench:config --probe` (node --import): counts the storage
// statements the server runs, by statement text, with the rows they return, so that a phase of
// the benchmark can say how many queries it took. Nothing under src/ knows of it. Read and reset
// through the inspector: globalThis.__benchQueries.take().
// Each statement's time from call to answer is summed too (`ms`): on the embedded store that includes
// waiting for PGlite's one connection, on PostgreSQL the network and the server.
// Both drivers are patched at their lowest entry Skyport uses: PGlite's execProtocolRawStream()
// (the embedded store's thread, which speaks the wire protocol; query() and transactions too),
// and pg's Client.prototype.query (a pool's query goes through it).
import { BroadcastChannel, isMainThread } from 'node:worker_threads';
import { PGlite } from '@electric-sql/pglite';
import pg from 'pg';

let counts = new Map();

function count(sql, rows, ms = 0) {
  const key = String(sql).replace(/\s+/g, ' ').trim().slice(0, 160);
  const c = counts.get(key) ?? { calls: 0, rows: 0, ms: 0 };
  c.calls += 1;
  c.rows += rows;
  c.ms += ms;
  counts.set(key, c);
}

const rowsOf = (result) => (Array.isArray(result?.rows) ? result.rows.length : 0);
const textOf = (q) => (typeof q === 'string' ? q : q?.text ?? '(unknown)');

function counted(query) {
  return async function (sql, ...rest) {
    const started = performance.now();
    const result = await query.call(this, sql, ...rest);
    count(textOf(sql), rowsOf(result), performance.now() - started);
    return result;
  };
}

PGlite.prototype.query = counted(PGlite.prototype.query);
const transaction = PGlite.prototype.transaction;
PGlite.prototype.transaction = function (work) {
  count('(embedded transaction: BEGIN … COMMIT)', 0);
  return transaction.call(this, (tx) => work({ ...tx, query: counted(tx.query) }));
};

// The embedded store's thread hands PostgreSQL protocol messages it did not build
// (src/storage/wire.ts): a statement is a Parse (name, text) then Bind, Execute, Sync, or,
// for a named statement already parsed, the same without its Parse. The text is read from the
// Parse, or from the Parse seen earlier for that name; the rows are the answer's DataRows.
const cstring = (buf, at) => {
  const end = buf.indexOf(0, at);
  return [buf.toString('utf8', at, end), end + 1];
};
const named = new Map();
function statementOf(message) {
  const buf = Buffer.from(message.buffer, message.byteOffset, message.byteLength);
  const type = String.fromCharCode(buf[0]);
  if (type === 'Q') return cstring(buf, 5)[0];
  if (type === 'P') {
    const [name, at] = cstring(buf, 5);
    const [text] = cstring(buf, at);
    if (name) named.set(name, text);
    return text;
  }
  if (type === 'B') {
    const [, at] = cstring(buf, 5);
    return named.get(cstring(buf, at)[0]) ?? '(a named statement parsed before counting began)';
  }
  return `(protocol message ${type})`;
}
/** DataRow messages in an answer, read whole once it is complete (its chunks split messages anywhere). */
function dataRows(chunks) {
  const all = Buffer.concat(chunks);
  let rows = 0;
  for (let at = 0; at + 5 <= all.length; at += 1 + all.readInt32BE(at + 1)) {
    if (all[at] === 0x44) rows += 1; // 'D'
  }
  return rows;
}
const rawStream = PGlite.prototype.execProtocolRawStream;
PGlite.prototype.execProtocolRawStream = async function (message, options = {}) {
  const started = performance.now();
  const chunks = [];
  const onRawData = options.onRawData;
  const result = await rawStream.call(this, message, {
    ...options,
    onRawData: (bytes) => {
      chunks.push(Buffer.from(bytes));
      onRawData?.(bytes);
    },
  });
  const ms = performance.now() - started;
  count(statementOf(message), dataRows(chunks), ms);
  return result;
};

const clientQuery = pg.Client.prototype.query;
pg.Client.prototype.query = function (q, values, callback) {
  const cb = typeof values === 'function' ? values : callback;
  if (typeof cb === 'function') {
    const wrapped = (err, result) => {
      count(textOf(q), rowsOf(result));
      cb(err, result);
    };
    return typeof values === 'function' ? clientQuery.call(this, q, wrapped) : clientQuery.call(this, q, values, wrapped);
  }
  const result = clientQuery.call(this, q, values);
  if (result && typeof result.then === 'function') result.then((r) => count(textOf(q), rowsOf(r)), () => count(textOf(q), 0));
  return result;
};

// The embedded store runs PGlite in a worker thread, which inherits this preload: it sends its
// counts to the main thread, where take() is read, every 100 ms.
const channel = new BroadcastChannel('skyport-bench-queries');
if (isMainThread) {
  channel.onmessage = (event) => {
    for (const [sql, c] of event.data) {
      const mine = counts.get(sql) ?? { calls: 0, rows: 0, ms: 0 };
      counts.set(sql, { calls: mine.calls + c.calls, rows: mine.rows + c.rows, ms: mine.ms + c.ms });
    }
  };
  channel.unref();
} else {
  setInterval(() => {
    if (counts.size === 0) return;
    channel.postMessage([...counts]);
    counts = new Map();
  }, 100).unref();
  channel.unref();
}

globalThis.__benchQueries = {
  /** The counts since the last take, most called first, as JSON. */
  take() {
    const out = [...counts].map(([sql, c]) => ({ sql, ...c })).sort((a, b) => b.calls - a.calls);
    counts = new Map();
    return JSON.stringify(out);
  },
};
