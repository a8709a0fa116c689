import { useQuery } from '@tanstack/react-query';
import type { ApiAnswer } from '../../../lib/api-client.js';
import { rolloutQuery } from '../api/queries.js';
import type { Session } from '../../../lib/session.js';
import { ShareBar } from '../../../components/ShareBar.js';
import type { ConfigSchema } from '../utils/config-form.js';

type Counts = ApiAnswer<'/v1/products/{productIdOrSlug}/config/rollout'>['modules'][string];

/** How often the rollout is read while the page is open: devices take a change within seconds. */
const EVERY_MS = 2000;

/** One module's bar: in sync, pending and refused as shares of the devices. */
function Bar({ label, counts, total }: { label: string; counts: Counts; total: number }) {
  const words = `${counts.in_sync} in sync, ${counts.pending} pending, ${counts.rejected} refused`;
  return <ShareBar label={label} parts={[['in-sync', counts.in_sync], ['pending', counts.pending], ['rejected', counts.rejected]]} total={total} words={words} />;
}

/** The fleet's rollout (GET …/config/rollout), read again every two seconds while it is shown. */
export function Rollout({ session, product, schema }: { session: Session; product: string; schema: ConfigSchema }) {
  const rollout = useQuery({
    ...rolloutQuery(session, product),
    refetchInterval: EVERY_MS,
  });
  const title = (module: string) => {
    const t = schema.properties?.[module]?.title;
    return typeof t === 'string' ? t : module;
  };
  const r = rollout.data;
  return (
    <section aria-labelledby="rollout-title" className="card">
      <h4 id="rollout-title">Rollout</h4>
      {rollout.error && <p role="alert" className="error">{rollout.error.message}</p>}
      {r && r.devices === 0 && <p>No devices in this product yet.</p>}
      {r && r.devices > 0 && (
        <>
          <p>
            Of {r.devices} device(s): {r.in_sync} in sync, {r.pending} pending ({r.pending_online} of them online), {r.rejected} refused a value.
          </p>
          <p className="legend" aria-hidden="true">
            <span className="swatch in-sync" /> in sync <span className="swatch pending" /> pending <span className="swatch rejected" /> refused
          </p>
          <ul className="rollout" aria-label="Rollout by module">
            {Object.entries(r.modules).map(([module, counts]) => <Bar key={module} label={title(module)} counts={counts} total={r.devices} />)}
          </ul>
        </>
      )}
    </section>
  );
}
