import { useRef, useState, type FormEvent, type ReactNode } from 'react';
import { useMutation, useQuery, useQueryClient } from '@tanstack/react-query';
import { Link, useNavigate, useParams } from 'react-router';
import { api, type ApiAnswer } from '../../../lib/api-client.js';
import { deviceKeys, deviceQuery } from '../api/queries.js';
import type { Session } from '../../../lib/session.js';
import { describeStream, useEventStream, type StreamEvent } from '../../../lib/events.js';
import { DeviceCalls } from './DeviceCalls.js';
import { DeviceGroups } from './DeviceGroups.js';
import { ConfirmButton } from '../../../components/Confirm.js';

export type DeviceDetail = ApiAnswer<'/v1/products/{productIdOrSlug}/devices/{deviceId}'>;

/** A device's path parameters, for its calls. */
export interface DeviceAt { params: { path: { productIdOrSlug: string; deviceId: string } } }

/** The newest events the page keeps: enough to watch, bounded so a chatty device cannot fill memory. */
const KEPT = 100;

/** What another part of the console shows of the device on its page, given the device and a way to read it again after a change. */
export type DeviceSection = (device: DeviceDetail, refresh: () => Promise<unknown>) => ReactNode;

/**
 * One device of the fleet: its details, its settings, its groups, calls and reads, and its live
 * events. `firmware` is its firmware section, which the firmware feature draws (app/ puts them together).
 */
export function Device({ session, product, firmware }: { session: Session; product: string; firmware?: DeviceSection }) {
  const { id = '' } = useParams();
  const at: DeviceAt = { params: { path: { productIdOrSlug: product, deviceId: id } } };
  const client = useQueryClient();
  const [live, setLive] = useState<{ online: boolean; at: string; seen: number } | null>(null);
  // A device tells what it declares just after it connects: while it is online and has declared
  // nothing, the record is read again for a little while, counted from its coming online on this
  // page's stream or, when it was online already as the page opened (its `hello` may not have
  // been stored when the page read it), from the first read that found it so.
  const nothingSince = useRef<number | null>(null);
  const device = useQuery({
    ...deviceQuery(session, product, id),
    refetchInterval: (q) => {
      const d = q.state.data;
      if (!d || d.functions.length > 0 || Object.keys(d.variables).length > 0) return false;
      if (!(live ? live.online : d.online)) return false;
      const since = live?.online ? live.seen : (nothingSince.current ??= Date.now());
      return Date.now() - since < 30_000 ? 1000 : false;
    },
  });
  const [events, setEvents] = useState<Array<StreamEvent & { key: number }>>([]);
  const [paused, setPaused] = useState(false);
  const [missed, setMissed] = useState(0);
  const stream = useEventStream(`/v1/products/${encodeURIComponent(product)}/devices/${encodeURIComponent(id)}/events`, session.token, (e) => {
    if (e.name === 'spark/status' && (e.data === 'online' || e.data === 'offline')) {
      setLive({ online: e.data === 'online', at: e.published_at, seen: Date.now() });
      if (e.data === 'online') void client.invalidateQueries({ queryKey: deviceKeys.one(product, id) });
    }
    if (paused) setMissed((n) => n + 1);
    else setEvents((list) => [{ ...e, key: Date.now() + Math.random() }, ...list].slice(0, KEPT));
  });

  if (device.error) return <p role="alert" className="error">{device.error.message} <Link to={`/products/${product}`}>Back to the devices</Link></p>;
  if (!device.data) return <p>Loading…</p>;
  const d = device.data;
  const online = live?.online ?? d.online;
  const heard = live?.at ?? d.last_heard;
  return (
    <section aria-labelledby="device-title">
      <p><Link to={`/products/${product}`}>← All devices</Link></p>
      <div className="row">
        <h3 id="device-title">{d.name ?? 'Device'} <code>{d.id}</code></h3>
        <Link to="config">Device settings</Link>
      </div>
      <dl className="pairs">
        <dt>State</dt><dd>{online ? 'online' : 'offline'}</dd>
        <dt>Last heard</dt><dd>{heard ? new Date(heard).toLocaleString() : 'never'}</dd>
        <dt>Device OS</dt><dd>{d.system_firmware_version ?? 'not reported'}</dd>
        <dt>Mode</dt><dd>{d.development ? 'development device' : 'regular device'}</dd>
      </dl>
      <Edit session={session} at={at} device={d} product={product} />
      {firmware?.(d, () => client.invalidateQueries({ queryKey: deviceKeys.one(product, id) }))}
      <DeviceGroups session={session} at={at} device={d} product={product} />
      <DeviceCalls session={session} at={at} device={d} />
      <section aria-labelledby="events-title">
        <div className="row">
          <h4 id="events-title">Events</h4>
          <button type="button" aria-pressed={paused} onClick={() => { setPaused(!paused); setMissed(0); }}>{paused ? 'Resume' : 'Pause'}</button>
        </div>
        <p role="status" className="hint">{describeStream(stream.state, stream.why)}{paused ? ` Paused: ${missed} event(s) not shown.` : ''}</p>
        {events.length === 0 ? <p>No events since the page opened.</p> : (
          <ol className="events" aria-label="Events, newest first">
            {events.map((e) => (
              <li key={e.key}><time dateTime={e.published_at}>{new Date(e.published_at).toLocaleTimeString()}</time> <strong>{e.name}</strong> <code>{e.data ?? ''}</code></li>
            ))}
          </ol>
        )}
      </section>
      <Remove session={session} at={at} product={product} />
    </section>
  );
}

/** Name, notes and the development flag (PUT …/devices/:id). */
function Edit({ session, at, device, product }: { session: Session; at: DeviceAt; device: DeviceDetail; product: string }) {
  const client = useQueryClient();
  const [said, setSaid] = useState<string | null>(null);
  const save = useMutation({
    mutationFn: (body: { name?: string; notes?: string | null; development?: boolean }) => api(session.token).PUT('/v1/products/{productIdOrSlug}/devices/{deviceId}', { ...at, body }),
    onSuccess: async (_r, body) => {
      setSaid('development' in body ? (body.development ? 'It is now a development device: its own configuration wins.' : 'It is now a regular device.') : 'Saved.');
      await client.invalidateQueries({ queryKey: deviceKeys.one(product, device.id) });
      await client.invalidateQueries({ queryKey: deviceKeys.fleet(product) });
    },
  });
  function submit(e: FormEvent<HTMLFormElement>) {
    e.preventDefault();
    const f = new FormData(e.currentTarget);
    const name = String(f.get('name')).trim();
    const notes = String(f.get('notes'));
    save.mutate({ ...(name !== (device.name ?? '') ? { name } : {}), notes: notes === '' ? null : notes });
  }
  return (
    <section aria-labelledby="edit-title" className="card">
      <h4 id="edit-title">Name and notes</h4>
      <form onSubmit={submit}>
        <label>Name<input name="name" defaultValue={device.name ?? ''} maxLength={63} key={`n${device.name}`} /></label>
        <label>Notes<textarea name="notes" defaultValue={device.notes ?? ''} maxLength={1000} rows={3} key={`o${device.notes}`} /></label>
        <button type="submit" disabled={save.isPending}>Save</button>
      </form>
      <p>
        <button type="button" disabled={save.isPending} onClick={() => save.mutate({ development: !device.development })}>
          {device.development ? 'Make it a regular device' : 'Make it a development device'}
        </button>
      </p>
      {said && !save.error && <p role="status">{said}</p>}
      {save.error && <p role="alert" className="error">{save.error.message}</p>}
    </section>
  );
}

/** Out of the product (DELETE …/devices/:id), after a confirmation step on the page. */
function Remove({ session, at, product }: { session: Session; at: DeviceAt; product: string }) {
  const navigate = useNavigate();
  const client = useQueryClient();
  const remove = useMutation({
    mutationFn: () => api(session.token).DELETE('/v1/products/{productIdOrSlug}/devices/{deviceId}', at),
    onSuccess: async () => {
      await client.invalidateQueries({ queryKey: deviceKeys.fleet(product) });
      void navigate(`/products/${product}`);
    },
  });
  return (
    <section aria-labelledby="remove-title" className="card">
      <h4 id="remove-title">Remove from the product</h4>
      <p>The device leaves this product and its owner is released. It keeps its identity and can be imported again.</p>
      <ConfirmButton label="Remove from the product" question="Remove this device from the product?" confirmLabel="Yes, remove it" pending={remove.isPending} onConfirm={() => remove.mutate()} />
      {remove.error && <p role="alert" className="error">{remove.error.message}</p>}
    </section>
  );
}
