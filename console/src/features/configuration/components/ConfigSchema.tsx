import { useState, type ChangeEvent } from 'react';
import { useMutation, useQuery, useQueryClient } from '@tanstack/react-query';
import { api, SCHEMA_TYPE, type ApiAnswer } from '../../../lib/api-client.js';
import { configKeys, schemaQuery } from '../api/queries.js';
import type { Session } from '../../../lib/session.js';
import { ConfigNav } from './ConfigNav.js';
import { violationsOf, type Violation } from '../utils/config-paths.js';
import { defaultSchema } from '../../../../../src/domain/config/default-schema.js';
import { ConfirmButton } from '../../../components/Confirm.js';

/** What a schema write or restore answers. */
type Written = ApiAnswer<'/v1/products/{productIdOrSlug}/config', 'delete'>;

/** Whether two JSON documents are the same, key order aside. */
function same(a: unknown, b: unknown): boolean {
  if (a === b) return true;
  if (typeof a !== 'object' || typeof b !== 'object' || a === null || b === null || Array.isArray(a) !== Array.isArray(b)) return false;
  const ka = Object.keys(a);
  const kb = Object.keys(b);
  return ka.length === kb.length && ka.every((k) => same((a as Record<string, unknown>)[k], (b as Record<string, unknown>)[k]));
}

/** The schema in force: shown, downloaded, replaced by a custom one from a file, or restored. */
export function ConfigSchema({ session, product }: { session: Session; product: string }) {
  const at = { params: { path: { productIdOrSlug: product } } };
  const client = useQueryClient();
  const schema = useQuery(schemaQuery(session, product));
  const [violations, setViolations] = useState<Violation[] | null>(null);
  const [done, setDone] = useState<string | null>(null);
  const [fileError, setFileError] = useState<string | null>(null);

  const changed = async (r: Written, what: string) => {
    setDone(`${r.message ?? what} (version ${r.history_version}).${r.kept_aside.length > 0 ? ' Values of modules it no longer has are kept aside.' : ''}`);
    for (const key of [configKeys.schema, configKeys.fleetValues, configKeys.rollout, configKeys.history]) await client.invalidateQueries({ queryKey: key(product) });
  };
  const upload = useMutation({
    mutationFn: (body: unknown) => api(session.token).PUT('/v1/products/{productIdOrSlug}/config', { ...at, headers: { 'content-type': SCHEMA_TYPE }, body }),
    // Sent as a schema, it answers as a schema write (the other answers are values' and dry runs').
    onSuccess: (r) => ('history_version' in r ? changed(r, 'Schema uploaded') : undefined),
    onError: (err) => setViolations(violationsOf(err)),
  });
  const restore = useMutation({
    // The content type says what is restored: the schema, not the values.
    mutationFn: () => api(session.token).DELETE('/v1/products/{productIdOrSlug}/config', { ...at, headers: { 'content-type': SCHEMA_TYPE } }),
    onSuccess: (r) => changed(r, 'Default schema restored'),
  });

  const onFile = async (e: ChangeEvent<HTMLInputElement>) => {
    const file = e.target.files?.[0];
    e.target.value = '';
    setDone(null);
    setViolations(null);
    setFileError(null);
    upload.reset();
    if (!file) return;
    let parsed: unknown;
    try {
      parsed = JSON.parse(await file.text());
    } catch (err) {
      setFileError(`${file.name} is not JSON: ${(err as Error).message}`);
      return;
    }
    upload.mutate(parsed);
  };

  const text = schema.data ? JSON.stringify(schema.data, null, 2) : '';
  const isDefault = schema.data ? same(schema.data, defaultSchema()) : false;
  return (
    <section aria-labelledby="schema-title">
      <ConfigNav product={product} />
      <h3 id="schema-title">Configuration schema</h3>
      {schema.error && <p role="alert" className="error">{schema.error.message}</p>}
      {done && <p role="status">{done}</p>}
      {schema.data && (
        <>
          <p>{isDefault ? 'The product uses the default schema.' : 'The product uses a custom schema.'}</p>
          <div className="row">
            <a href={`data:application/schema+json;charset=utf-8,${encodeURIComponent(text)}`} download={`${product}-schema.json`}>Download the schema</a>
            <label>Upload a custom schema (a JSON file)
              <input type="file" accept=".json,application/json,application/schema+json" onChange={(e) => { void onFile(e); }} disabled={upload.isPending} />
            </label>
          </div>
          {fileError && <p role="alert" className="error">{fileError}</p>}
          {upload.error && (
            <div role="alert">
              <p className="error">{upload.error.message}</p>
              {violations && violations.length > 0 && (
                <ul aria-label="Violations">
                  {violations.map((v) => <li key={`${v.path} ${v.message}`}><code>{v.path}</code>: {v.message}</li>)}
                </ul>
              )}
            </div>
          )}
          {!isDefault && (
            <ConfirmButton destructive={false} label="Restore the default schema…" question="Restore the default schema? Values of modules it does not have are kept aside, not deleted." confirmLabel="Restore the default"
              onAsk={() => setDone(null)} pending={restore.isPending} onConfirm={() => restore.mutateAsync()} />
          )}
          {restore.error && <p role="alert" className="error">{restore.error.message}</p>}
          <h4>The schema in force</h4>
          <pre className="json" tabIndex={0} aria-label="The schema in force, as JSON">{text}</pre>
        </>
      )}
    </section>
  );
}
