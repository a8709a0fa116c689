import { useState, type ChangeEvent } from 'react';
import { useQueryClient } from '@tanstack/react-query';
import { api, type ApiAnswer } from '../../../lib/api-client.js';
import { deviceKeys } from '../api/queries.js';
import { ApiError } from '../../../lib/api-error.js';
import type { Session } from '../../../lib/session.js';

type ImportResult = ApiAnswer<'/v1/products/{productIdOrSlug}/devices', 'post'>;

/** Ids a request carries: well inside the API's limit (10,000 and the 1 MiB body). */
const BATCH = 1000;

/** The kinds of the import's answer, in the order they are shown, with what each means. */
const KINDS: Array<[keyof ImportResult, string, string]> = [
  ['updatedDeviceIds', 'Added', 'now in this product'],
  ['existingDeviceIds', 'Already in the product', 'nothing changed'],
  ['nonmemberDeviceIds', 'Not moved', 'in another product, or owned by an account outside the team'],
  ['invalidDeviceIds', 'Invalid', 'not a device id, an unknown device, or a device of another platform'],
  ['protectedDeviceIds', 'Protected', 'not moved'],
];

type Lists = Omit<ImportResult, 'updated'>;
const empty = (): Lists => ({ updatedDeviceIds: [], existingDeviceIds: [], nonmemberDeviceIds: [], invalidDeviceIds: [], protectedDeviceIds: [] });

/**
 * "Import devices": a file of device ids (one per line, or separated by commas or spaces, as
 * particle-cli's file) into the product (POST …/devices). The file is read here and sent in
 * batches, so a large one shows its progress and stays within the API's limits.
 */
export function ImportDevices({ session, product, onClose }: { session: Session; product: string; onClose: () => void }) {
  const client = useQueryClient();
  const [progress, setProgress] = useState<{ done: number; total: number } | null>(null);
  const [result, setResult] = useState<Lists | null>(null);
  const [error, setError] = useState<string | null>(null);

  async function chosen(e: ChangeEvent<HTMLInputElement>) {
    const file = e.target.files?.[0];
    if (!file) return;
    setResult(null);
    setError(null);
    const ids = (await file.text()).split(/[\s,]+/).filter((s) => s !== '');
    if (ids.length === 0) {
      setError('The file names no device ids: put one id a line.');
      return;
    }
    const lists = empty();
    setProgress({ done: 0, total: ids.length });
    try {
      for (let i = 0; i < ids.length; i += BATCH) {
        const batch = ids.slice(i, i + BATCH);
        const r = await api(session.token).POST('/v1/products/{productIdOrSlug}/devices', { params: { path: { productIdOrSlug: product } }, body: { ids: batch } });
        for (const [kind] of KINDS) (lists[kind as keyof Lists]).push(...(r[kind as keyof Lists] ?? []));
        setProgress({ done: Math.min(ids.length, i + BATCH), total: ids.length });
      }
    } catch (err) {
      // What was imported before the failure stays imported: it is shown with the error.
      setError(err instanceof ApiError ? `${err.message} (the ids before it were sent)` : 'The import stopped.');
    }
    setResult(lists);
    await client.invalidateQueries({ queryKey: deviceKeys.fleet(product) });
  }

  const running = progress !== null && progress.done < progress.total && !error;
  return (
    <section className="card" aria-labelledby="import-title">
      <h4 id="import-title">Import devices</h4>
      <p>A text file of device ids, one a line: devices already known to the cloud join this product.</p>
      <label>File of device ids<input type="file" accept=".txt,.csv,text/plain,text/csv" onChange={(e) => { void chosen(e); }} disabled={running} /></label>
      {progress && (
        <p className="progress">
          <progress max={progress.total} value={progress.done} aria-label="Import progress" />
          <span role="status">{progress.done} of {progress.total} ids</span>
        </p>
      )}
      {error && <p role="alert" className="error">{error}</p>}
      {result && (
        <div aria-label="Import result">
          {KINDS.map(([kind, title, meaning]) => {
            const ids = result[kind as keyof Lists];
            if (kind === 'protectedDeviceIds' && ids.length === 0) return null;
            return (
              <details key={kind} open={ids.length > 0 && ids.length <= 20} className="import-kind">
                <summary>{title}: {ids.length} <span className="hint">({meaning})</span></summary>
                <ul className="ids">{ids.map((id, i) => <li key={`${i}-${id}`}><code>{id}</code></li>)}</ul>
              </details>
            );
          })}
        </div>
      )}
      <button type="button" className="link" onClick={onClose}>Close</button>
    </section>
  );
}
