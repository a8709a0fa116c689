import { useState } from 'react';
import { useMutation, useQuery, useQueryClient } from '@tanstack/react-query';
import Form from '@rjsf/core';
import type { ErrorSchema } from '@rjsf/utils';
import { api } from '../../../lib/api-client.js';
import { configKeys, fleetValuesQuery, schemaQuery } from '../api/queries.js';
import type { Session } from '../../../lib/session.js';
import { errorsAt, firmwareNotes, fleetSchema, validator, violationsOf } from '../utils/config-form.js';
import { ConfigNav } from './ConfigNav.js';
import { Rollout } from './Rollout.js';

type Values = Record<string, unknown>;

/** The fleet's settings as a form drawn from the schema in force; a dry run before saving. */
export function Configuration({ session, product }: { session: Session; product: string }) {
  const at = { params: { path: { productIdOrSlug: product } } };
  const client = useQueryClient();
  const schema = useQuery(schemaQuery(session, product));
  const values = useQuery(fleetValuesQuery(session, product));
  const [draft, setDraft] = useState<Values | null>(null);
  const [serverErrors, setServerErrors] = useState<ErrorSchema | undefined>();
  const [reach, setReach] = useState<string | null>(null);
  const [saved, setSaved] = useState<string | null>(null);

  const put = (body: Values, dryRun: boolean) => api(session.token).PUT('/v1/products/{productIdOrSlug}/config', { params: { ...at.params, ...(dryRun ? { query: { dry_run: true } } : {}) }, body });
  const onRefused = (err: Error) => {
    const violations = violationsOf(err);
    if (violations) setServerErrors(errorsAt(violations));
  };
  const check = useMutation({
    mutationFn: (body: Values) => put(body, true),
    onSuccess: (r) => { if ('devices' in r) setReach(`This change reaches ${r.devices.changed} device(s), ${r.devices.online} of them online now.`); },
    onError: onRefused,
  });
  const save = useMutation({
    mutationFn: (body: Values) => put(body, false),
    onSuccess: async (r) => {
      setSaved(`Saved as version ${'version' in r ? r.version ?? '' : ''}: connected devices take it now, the others when they reconnect.`);
      setDraft(null);
      setReach(null);
      await client.invalidateQueries({ queryKey: configKeys.fleetValues(product) });
      await client.invalidateQueries({ queryKey: configKeys.rollout(product) });
    },
    onError: onRefused,
  });

  if (schema.error || values.error) return <><ConfigNav product={product} /><p role="alert" className="error">{(schema.error ?? values.error)?.message}</p></>;
  if (!schema.data || !values.data) return <><ConfigNav product={product} /><p>Loading…</p></>;
  const formSchema = fleetSchema(schema.data);
  const data = draft ?? values.data.configuration;
  return (
    <section aria-labelledby="config-title">
      <ConfigNav product={product} />
      <h3 id="config-title">Fleet configuration</h3>
      <p>Each panel is a module of the schema in force. Saving sends the whole configuration.</p>
      <Form
        schema={formSchema}
        uiSchema={{ ...firmwareNotes(formSchema), 'ui:submitButtonOptions': { submitText: 'Save' } }}
        validator={validator}
        formData={data}
        extraErrors={serverErrors}
        showErrorList="top"
        // The schema's own messages, at their fields, rather than the browser's bubbles.
        noHtml5Validate
        onChange={(e) => { setDraft(e.formData as Values); setSaved(null); setReach(null); setServerErrors(undefined); }}
        onSubmit={(e) => save.mutate(e.formData as Values)}
      >
        <div className="row">
          <button type="button" disabled={check.isPending} onClick={() => check.mutate(data)}>Check reach</button>
          <button type="submit" disabled={save.isPending}>Save</button>
        </div>
      </Form>
      {reach && <p role="status">{reach}</p>}
      {saved && <p role="status">{saved}</p>}
      {(save.error ?? check.error) && <p role="alert" className="error">{(save.error ?? check.error)?.message}</p>}
      <Rollout session={session} product={product} schema={schema.data} />
    </section>
  );
}
