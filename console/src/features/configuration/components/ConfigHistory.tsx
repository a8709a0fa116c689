import { useState } from 'react';
import { useMutation, useQueries, useQuery, useQueryClient } from '@tanstack/react-query';
import { api, type ApiAnswer } from '../../../lib/api-client.js';
import { configKeys, diffQuery, historyQuery, versionQuery } from '../api/queries.js';
import type { Session } from '../../../lib/session.js';
import { ConfigNav } from './ConfigNav.js';
import { leaves, shown } from '../utils/config-paths.js';
import { ConfirmButton } from '../../../components/Confirm.js';

type Entry = ApiAnswer<'/v1/products/{productIdOrSlug}/config/history'>['history'][number];
type Diff = ApiAnswer<'/v1/products/{productIdOrSlug}/config/history/{version}/diff'>;
type Change = Diff['changes'][number];

function scopeOf(e: Entry): string {
  if (e.kind === 'schema') return 'Schema';
  return e.device_id ? `Device ${e.device_id}` : 'Fleet values';
}
function who(e: Entry): string {
  if (e.by.kind === 'user') return e.by.username ?? 'a former user';
  return 'a product token';
}
function what(e: Entry): string {
  if (e.action === 'rollback') return `rolled back to version ${e.rolled_back_from ?? ''}`;
  if (e.action === 'reset') return e.kind === 'schema' ? 'default restored' : 'reset to inherited values';
  return e.kind === 'schema' ? 'schema replaced' : 'written';
}
function changeWords(c: Change): string {
  if (c.op === 'add') return `${c.path} set to ${shown(c.to)}`;
  if (c.op === 'remove') return `${c.path} removed (was ${shown(c.from)})`;
  return `${c.path}: ${shown(c.from)} → ${shown(c.to)}`;
}
/** A short account of a version's changes; a schema's are many, so counted. */
function summary(e: Entry, d: Diff | undefined): string {
  if (!d) return '…';
  if (d.changes.length === 0) return 'no change';
  if (e.kind === 'schema' || d.changes.length > 3) return `${d.changes.length} change(s)`;
  return d.changes.map(changeWords).join('; ');
}

/** The configuration's history: every version, a diff of any two, and rollback to one. */
export function ConfigHistory({ session, product }: { session: Session; product: string }) {
  const client = useQueryClient();
  const [page, setPage] = useState(1);
  const list = useQuery({
    ...historyQuery(session, product, page),
    placeholderData: (previous) => previous,
  });
  const entries = list.data?.history ?? [];
  // What each version changed, against the version before it in its scope.
  const diffs = useQueries({
    queries: entries.map((e) => ({ ...diffQuery(session, product, e.version, null), staleTime: Infinity })),
  });
  const [done, setDone] = useState<string | null>(null);
  const rollback = useMutation({
    mutationFn: (version: number) => api(session.token).POST('/v1/products/{productIdOrSlug}/config/history/{version}/rollback', { params: { path: { productIdOrSlug: product, version } } }),
    onSuccess: async (r, version) => {
      setPage(1);
      // A schema's answer has its history version apart from the schema's own version.
      setDone(`Rolled back to version ${version}: the change is version ${'history_version' in r ? r.history_version : r.version}, delivered like any other.`);
      await client.invalidateQueries({ queryKey: configKeys.history(product) });
      for (const key of [configKeys.fleetValues, configKeys.schema, configKeys.rollout]) await client.invalidateQueries({ queryKey: key(product) });
    },
  });

  // Before its first change a fleet has no values of its own: going back there is an empty write.
  const reset = useMutation({
    mutationFn: () => api(session.token).PUT('/v1/products/{productIdOrSlug}/config', { params: { path: { productIdOrSlug: product } }, body: {} }),
    onSuccess: async (r) => {
      setPage(1);
      setDone(`The fleet's values are cleared: every setting takes its default again (version ${'version' in r ? r.version ?? '' : ''}).`);
      await client.invalidateQueries({ queryKey: configKeys.history(product) });
      for (const key of [configKeys.fleetValues, configKeys.rollout]) await client.invalidateQueries({ queryKey: key(product) });
    },
  });

  return (
    <section aria-labelledby="history-title">
      <ConfigNav product={product} />
      <h3 id="history-title">Configuration history</h3>
      {list.error && <p role="alert" className="error">{list.error.message}</p>}
      {done && <p role="status">{done}</p>}
      {(rollback.error ?? reset.error) && <p role="alert" className="error">{(rollback.error ?? reset.error)?.message}</p>}
      {list.data && entries.length === 0 && <p>No change yet: the product has its default configuration.</p>}
      {entries.length > 0 && (
        <>
          <div className="table-wrap">
            <table>
              <caption className="sr-only">Versions, newest first</caption>
              <thead><tr><th scope="col">Version</th><th scope="col">What</th><th scope="col">Who and when</th><th scope="col">Changes</th><th scope="col"><span className="sr-only">Actions</span></th></tr></thead>
              <tbody>
                {entries.map((e, i) => (
                  <tr key={e.version}>
                    <th scope="row">{e.version}</th>
                    <td>{scopeOf(e)}, {what(e)}</td>
                    <td>{who(e)}, <time dateTime={e.at}>{new Date(e.at).toLocaleString()}</time></td>
                    <td>{diffs[i]?.error ? diffs[i].error.message : summary(e, diffs[i]?.data)}</td>
                    <td>
                      <ConfirmButton destructive={false} label="Roll back…" name={`Roll back to version ${e.version}`} question={`Write version ${e.version} again as a new change?`} confirmLabel="Roll back"
                        onAsk={() => setDone(null)} pending={rollback.isPending} onConfirm={() => rollback.mutateAsync(e.version)} />
                    </td>
                  </tr>
                ))}
              </tbody>
            </table>
          </div>
          {list.data && list.data.meta.total_pages > 1 && (
            <div className="row">
              <button type="button" disabled={page <= 1} onClick={() => setPage(page - 1)}>Newer</button>
              <span>Page {page} of {list.data.meta.total_pages}</span>
              <button type="button" disabled={page >= list.data.meta.total_pages} onClick={() => setPage(page + 1)}>Older</button>
            </div>
          )}
          <p>
            Before the first change the fleet had no values of its own: every setting took its schema&apos;s default.{' '}
            <ConfirmButton destructive={false} label="Back to the defaults…" question="Clear the fleet's values, so that every setting takes its default again?" confirmLabel="Clear the fleet's values"
              onAsk={() => setDone(null)} pending={reset.isPending} onConfirm={() => reset.mutateAsync()} />
          </p>
          <Compare session={session} product={product} entries={entries} />
        </>
      )}
    </section>
  );
}

/** Two versions of one scope side by side, every setting, the changed ones marked. */
function Compare({ session, product, entries }: { session: Session; product: string; entries: Entry[] }) {
  const [a, setA] = useState<number>(entries[1]?.version ?? entries[0]?.version ?? 0);
  const [b, setB] = useState<number>(entries[0]?.version ?? 0);
  const [all, setAll] = useState(false);
  // The API's diff says whether the two can be compared (one scope) and what changed.
  const diff = useQuery({ ...diffQuery(session, product, b, a), enabled: a !== b });
  const docs = useQueries({
    queries: [a, b].map((v) => ({ ...versionQuery(session, product, v), staleTime: Infinity })),
  });
  const [left, right] = docs.map((d) => (d.data ? leaves(d.data.document) : undefined));
  const docError = docs.find((d) => d.error)?.error;
  const changed = new Set(diff.data?.changes.map((c) => c.path) ?? []);
  const isChanged = (path: string) => [...changed].some((c) => path === c || path.startsWith(`${c}/`));
  const paths = left && right ? [...new Set([...left.keys(), ...right.keys()])] : [];
  const rows = paths.filter((p) => all || isChanged(p));
  const pick = (label: string, value: number, set: (v: number) => void) => (
    <label>{label}
      <select value={value} onChange={(e) => set(Number(e.target.value))}>
        {entries.map((e) => <option key={e.version} value={e.version}>Version {e.version}: {scopeOf(e)}</option>)}
      </select>
    </label>
  );
  return (
    <section aria-labelledby="compare-title" className="card">
      <h4 id="compare-title">Compare two versions</h4>
      <div className="row">
        {pick('Older version', a, setA)}
        {pick('Newer version', b, setB)}
      </div>
      <label className="inline"><input type="checkbox" checked={all} onChange={(e) => setAll(e.target.checked)} /> Show unchanged settings too</label>
      {a === b && <p>Choose two different versions.</p>}
      {a !== b && diff.error && <p role="alert" className="error">{diff.error.message}</p>}
      {a !== b && diff.data && docError && <p role="alert" className="error">{docError.message}</p>}
      {a !== b && diff.data && left && right && (
        <>
          <p role="status">{diff.data.changes.length} setting(s) changed between version {a} and version {b}.</p>
          {rows.length > 0 && (
            <div className="table-wrap">
              <table>
                <caption className="sr-only">Settings of version {a} and version {b}</caption>
                <thead><tr><th scope="col">Setting</th><th scope="col">Version {a}</th><th scope="col">Version {b}</th><th scope="col">Change</th></tr></thead>
                <tbody>
                  {rows.map((p) => (
                    <tr key={p} className={isChanged(p) ? 'changed' : undefined}>
                      <th scope="row"><code>{p}</code></th>
                      <td>{shown(left.get(p))}</td>
                      <td>{shown(right.get(p))}</td>
                      <td>{!isChanged(p) ? 'same' : !left.has(p) ? 'added' : !right.has(p) ? 'removed' : 'changed'}</td>
                    </tr>
                  ))}
                </tbody>
              </table>
            </div>
          )}
        </>
      )}
    </section>
  );
}
