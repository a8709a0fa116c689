import { useState } from 'react';
import { Link, useParams } from 'react-router';
import { useMutation, useQuery, useQueryClient } from '@tanstack/react-query';
import Form from '@rjsf/core';
import type { ErrorSchema } from '@rjsf/utils';
import { api, type ApiAnswer } from '../../../lib/api-client.js';
import { configKeys, deviceConfigQuery, deviceSchemaQuery, explainQuery } from '../api/queries.js';
import { ApiError } from '../../../lib/api-error.js';
import type { Session } from '../../../lib/session.js';
import {
  deviceSchema, errorsAt, firmwareNotes, mergeUi, refusalReason, sourceNotes, validator, violationsOf,
  type Source,
} from '../utils/config-form.js';
import { shown } from '../utils/config-paths.js';
import { ConfirmButton } from '../../../components/Confirm.js';

type Values = Record<string, unknown>;
type State = ApiAnswer<'/v1/products/{productIdOrSlug}/config/{deviceId}'>['delivery'][string]['state'];

const STATE_WORDS: Record<State, string> = { in_sync: 'In sync', pending: 'Pending', rejected: 'Refused' };
const SOURCE_WORDS: Record<Source, string> = { default: 'default', fleet: 'fleet', device: 'this device' };
/** Delivery moves on its own (the device acknowledges): read again while the page is open. */
const EVERY_MS = 2000;

/** The errors a device's refusal puts at its modules: what it refused and why, in words. */
function refusals(rejected: Record<string, number>): ErrorSchema {
  return errorsAt(Object.entries(rejected).map(([m, code]) => ({ path: `/${m}`, message: `The device refused this module: ${refusalReason(code)}.` })));
}

/**
 * One device's settings: what it holds (current), what it has yet to take (pending), where each
 * value comes from, and a form of the values it may have of its own: the device-level-only
 * modules, or every module on a development device.
 */
export function DeviceConfig({ session, product }: { session: Session; product: string }) {
  const { id = '' } = useParams();
  const at = { params: { path: { productIdOrSlug: product, deviceId: id } } };
  const client = useQueryClient();
  const schema = useQuery(deviceSchemaQuery(session, product, id));
  const view = useQuery({ ...deviceConfigQuery(session, product, id), refetchInterval: EVERY_MS });
  const explain = useQuery({ ...explainQuery(session, product, id), refetchInterval: EVERY_MS });
  const [draft, setDraft] = useState<Values | null>(null);
  const [serverErrors, setServerErrors] = useState<ErrorSchema | undefined>();
  const [saved, setSaved] = useState<string | null>(null);

  const save = useMutation({
    mutationFn: (body: Values) => api(session.token).PUT('/v1/products/{productIdOrSlug}/config/{deviceId}', { ...at, body }),
    onSuccess: async (r) => {
      // A write (never a dry run here) answers the device's configuration after it, and its version.
      if ('version' in r) {
        const held = Object.keys(r.configuration.pending).length > 0;
        setSaved(held ? `Saved as version ${r.version}: the device takes it when it next connects.` : `Saved as version ${r.version}: the device took it.`);
      }
      setDraft(null);
      await client.invalidateQueries({ queryKey: configKeys.device(product, id) });
      await client.invalidateQueries({ queryKey: configKeys.explain(product, id) });
    },
    onError: async (err) => {
      const violations = violationsOf(err);
      if (violations) setServerErrors(errorsAt(violations));
      if (err instanceof ApiError && Array.isArray(err.body.results)) {
        const results = err.body.results as Array<{ module: string; status: string; code: number | null }>;
        setServerErrors(refusals(Object.fromEntries(results.filter((x) => x.status === 'rejected').map((x) => [x.module, x.code ?? 0]))));
        // The write is stored (the device refused it): the page shows it as refused.
        await client.invalidateQueries({ queryKey: configKeys.device(product, id) });
      }
    },
  });

  const failed = schema.error ?? view.error ?? explain.error;
  if (failed) return <p role="alert" className="error">{failed.message}</p>;
  if (!schema.data || !view.data || !explain.data) return <p>Loading…</p>;
  const v = view.data;
  const development = explain.data.development;
  const formSchema = deviceSchema(schema.data, development);
  const modules = Object.keys(formSchema.properties ?? {});
  // What the device is to hold: a module's pending value, or what it confirmed.
  const effective: Values = Object.fromEntries(modules.map((m) => [m, v.configuration.pending[m] ?? v.configuration.current[m]]).filter(([, x]) => x !== undefined));
  const data = draft ?? effective;
  // Saving sends the device's own values: the modules it had of its own and those changed here;
  // a module left as it was keeps coming from the fleet.
  const ownValues = (d: Values): Values => Object.fromEntries(modules
    .filter((m) => m in v.own || JSON.stringify(d[m]) !== JSON.stringify(effective[m]))
    .map((m) => [m, d[m]]));
  const title = (m: string) => (typeof schema.data.properties?.[m]?.title === 'string' ? schema.data.properties[m].title : m);
  const delivery = Object.entries(v.delivery);

  return (
    <section aria-labelledby="device-config-title">
      <p><Link to={`/products/${encodeURIComponent(product)}/devices/${encodeURIComponent(id)}`}>Device {id}</Link></p>
      <h3 id="device-config-title">Settings of device <code>{id}</code></h3>
      <p>
        {development
          ? 'A development device: every module is its own to set, and its own values win over the fleet’s.'
          : 'A regular device takes the fleet configuration; only the device-level modules are set here. Make it a development device to set every module.'}
      </p>

      <h4>Delivery</h4>
      <div className="table-wrap">
        <table>
          <caption className="sr-only">Each module: where its value comes from, and whether the device has it</caption>
          <thead><tr><th scope="col">Module</th><th scope="col">From</th><th scope="col">State</th><th scope="col">Since</th></tr></thead>
          <tbody>
            {delivery.map(([m, d]) => {
              return (
                <tr key={m}>
                  <th scope="row">{title(m)}</th>
                  <td>{SOURCE_WORDS[v.sources[m] ?? 'default']}</td>
                  <td>{STATE_WORDS[d.state]}{d.state === 'rejected' ? `: ${refusalReason(d.code)}` : ''}</td>
                  <td>{d.since ? new Date(d.since).toLocaleString() : '—'}</td>
                </tr>
              );
            })}
          </tbody>
        </table>
      </div>
      {delivery.filter(([, d]) => d.state !== 'in_sync').map(([m, d]) => (
        <details key={m}>
          <summary>{title(m)}: current and {d.state === 'rejected' ? 'refused' : 'pending'} values</summary>
          <dl>
            <dt>Current (confirmed by the device)</dt><dd><code>{shown(v.configuration.current[m])}</code></dd>
            <dt>{d.state === 'rejected' ? 'Refused' : 'Pending'}</dt><dd><code>{shown(v.configuration.pending[m])}</code></dd>
          </dl>
        </details>
      ))}
      {v.outside_firmware_range.length > 0 && (
        <p>Not sent to this device (outside its firmware range): {v.outside_firmware_range.map((o) => o.path).join(', ')}.</p>
      )}

      <h4>Its values</h4>
      {modules.length === 0
        ? <p>The schema has no device-level modules.</p>
        : (
          <Form
            schema={formSchema}
            uiSchema={{ ...mergeUi(sourceNotes(explain.data.settings), firmwareNotes(formSchema)), 'ui:submitButtonOptions': { submitText: 'Save' } }}
            validator={validator}
            formData={data}
            extraErrors={serverErrors ?? refusals(v.rejected)}
            showErrorList="top"
            noHtml5Validate
            onChange={(e) => { setDraft(e.formData as Values); setSaved(null); setServerErrors(undefined); }}
            onSubmit={(e) => save.mutate(ownValues(e.formData as Values))}
          >
            <button type="submit" disabled={save.isPending}>Save</button>
          </Form>
        )}
      {saved && <p role="status">{saved}</p>}
      {save.error && <p role="alert" className="error">{save.error.message}</p>}
      {Object.keys(v.own).length > 0 && (
        <ConfirmButton label="Clear its own values…" question="Clear the values set on this device? It takes the fleet's values and the defaults again." confirmLabel="Clear its values"
          onAsk={() => setSaved(null)} pending={save.isPending} onConfirm={() => save.mutateAsync({})} />
      )}
    </section>
  );
}
