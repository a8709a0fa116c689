import { useState, type FormEvent } from 'react';
import { useMutation, useQuery, useQueryClient } from '@tanstack/react-query';
import { api, type ApiAnswer } from '../../../lib/api-client.js';
import { deviceKeys, gatewayQuery } from '../api/queries.js';
import type { Session } from '../../../lib/session.js';
import { CopyButton, DownloadLink } from '../../../components/copy.js';

type Made = ApiAnswer<'/v1/products/{productIdOrSlug}/device_identities', 'post'>['devices'][number];

/**
 * "Add devices": new device identities in the product (POST …/device_identities). Their secrets
 * exist only in this answer (the cloud keeps a hash), so they are offered once, as a CSV file and,
 * for one device, on the page with the command line that starts a simulated device for it.
 */
export function AddDevices({ session, product, onClose }: { session: Session; product: string; onClose: () => void }) {
  const client = useQueryClient();
  const [made, setMade] = useState<Made[] | null>(null);
  const add = useMutation({
    mutationFn: (quantity: number) => api(session.token).POST('/v1/products/{productIdOrSlug}/device_identities', { params: { path: { productIdOrSlug: product } }, body: { quantity } }),
    onSuccess: async (r) => {
      setMade(r.devices);
      await client.invalidateQueries({ queryKey: deviceKeys.fleet(product) });
    },
  });

  function submit(e: FormEvent<HTMLFormElement>) {
    e.preventDefault();
    add.mutate(Number(new FormData(e.currentTarget).get('quantity')));
  }

  if (made) return <Secrets session={session} product={product} made={made} onClose={onClose} />;
  return (
    <form onSubmit={submit} className="card" aria-labelledby="add-title">
      <h4 id="add-title">Add devices</h4>
      <p>New device identities in this product, each with its secret, which a device uses to connect.</p>
      <label>How many<input name="quantity" type="number" min={1} defaultValue={1} required /></label>
      <div className="row">
        <button type="submit" disabled={add.isPending}>Add</button>
        <button type="button" className="link" onClick={onClose}>Cancel</button>
      </div>
      {add.error && <p role="alert" className="error">{add.error.message}</p>}
    </form>
  );
}

function Secrets({ session, product, made, onClose }: { session: Session; product: string; made: Made[]; onClose: () => void }) {
  const csv = ['device_id,device_secret', ...made.map((m) => `${m.id},${m.device_secret}`)].join('\n') + '\n';
  const one = made.length === 1 ? made[0] : undefined;
  return (
    <section className="card" aria-labelledby="added-title">
      <h4 id="added-title">{made.length === 1 ? 'One device added' : `${made.length} devices added`}</h4>
      <p className="notice"><strong>Keep the secrets now: they will not be shown again.</strong> The cloud keeps only a hash of each.</p>
      <p><DownloadLink name={`${product}-devices.csv`} text={csv}>Download the ids and secrets (CSV)</DownloadLink></p>
      {one && (
        <>
          <dl className="pairs">
            <dt>Device ID</dt><dd><code>{one.id}</code></dd>
            <dt>Secret</dt><dd><code>{one.device_secret}</code> <CopyButton text={one.device_secret} label="Copy the secret" /></dd>
          </dl>
          <SimCommand session={session} made={one} />
        </>
      )}
      <button type="button" onClick={onClose}>Done</button>
    </section>
  );
}

/**
 * How to start a simulated device with this identity: `skyport sim` connects the identities of a
 * CSV file (docs/sdk.md), so the command writes that file first, then points the simulator at
 * this server's device gateway, as the API says where it is (GET /v1/device_gateway).
 */
function SimCommand({ session, made }: { session: Session; made: Made }) {
  const gateway = useQuery(gatewayQuery(session));
  if (gateway.error) return <p role="alert" className="error">{gateway.error.message}</p>;
  if (!gateway.data) return <p>Loading…</p>;
  const file = `device-${made.id}.csv`;
  const command = `printf 'id,secret\\n${made.id},${made.device_secret}\\n' > ${file} && npx skyport sim --credentials ${file} --mqtt-url ${gateway.data.mqtt_url}`;
  return (
    <>
      <p>To try it without hardware, start a simulated device with this identity (in a folder where Skyport is installed; it declares the functions <code>led</code> and <code>echo</code> and the variables <code>temp</code> and <code>uptime</code>; Ctrl-C stops it):</p>
      <pre className="command" aria-label="Command that starts a simulated device"><code>{command}</code></pre>
      <p><CopyButton text={command} label="Copy the command" /></p>
    </>
  );
}
