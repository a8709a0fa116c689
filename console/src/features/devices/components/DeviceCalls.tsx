import { useState, type FormEvent } from 'react';
import { api } from '../../../lib/api-client.js';
import { ApiError } from '../../../lib/api-error.js';
import type { Session } from '../../../lib/session.js';
import type { DeviceAt, DeviceDetail } from './Device.js';

/** An answer or the reason there is none, in words. */
type Outcome = { ok: true; text: string } | { ok: false; text: string };

function reason(err: unknown): Outcome {
  return { ok: false, text: err instanceof ApiError ? err.message : 'The request failed.' };
}

/**
 * What an application asks of a connected device (docs/api.md, "Calling devices"): call a
 * function, read a variable, make it signal. The device must be connected; the cloud's refusal
 * (offline, unknown name, timeout, the device's own error) is shown as it says it.
 */
export function DeviceCalls({ session, at, device }: { session: Session; at: DeviceAt; device: DeviceDetail }) {
  const named = (name: string) => ({ params: { path: { ...at.params.path, name } } });
  const [call, setCall] = useState<Outcome | null>(null);
  const [calling, setCalling] = useState(false);
  const [reads, setReads] = useState<Record<string, Outcome>>({});
  const [signal, setSignal] = useState<Outcome | null>(null);

  async function submitCall(e: FormEvent<HTMLFormElement>) {
    e.preventDefault();
    const f = new FormData(e.currentTarget);
    const name = String(f.get('function')).trim();
    setCalling(true);
    setCall(null);
    try {
      const r = await api(session.token).POST('/v1/products/{productIdOrSlug}/devices/{deviceId}/{name}', { ...named(name), body: { arg: String(f.get('arg')) } });
      setCall({ ok: true, text: `${name} returned ${r.return_value}` });
    } catch (err) {
      setCall(reason(err));
    } finally {
      setCalling(false);
    }
  }

  async function read(name: string) {
    setReads((r) => ({ ...r, [name]: { ok: true, text: 'reading…' } }));
    try {
      const r = await api(session.token).GET('/v1/products/{productIdOrSlug}/devices/{deviceId}/{name}', named(name));
      setReads((all) => ({ ...all, [name]: { ok: true, text: JSON.stringify(r.result) } }));
    } catch (err) {
      setReads((all) => ({ ...all, [name]: reason(err) }));
    }
  }

  async function sendSignal(on: boolean) {
    setSignal(null);
    try {
      await api(session.token).PUT('/v1/products/{productIdOrSlug}/devices/{deviceId}', { ...at, body: { signal: on ? '1' : '0' } });
      setSignal({ ok: true, text: on ? 'The device is signalling (its LED shows a rainbow).' : 'The device stopped signalling.' });
    } catch (err) {
      setSignal(reason(err));
    }
  }

  const variables = Object.entries(device.variables);
  return (
    <>
      <section aria-labelledby="functions-title" className="card">
        <h4 id="functions-title">Call a function</h4>
        <p>{device.functions.length > 0 ? <>Declared: {device.functions.map((f, i) => <span key={f}>{i > 0 ? ', ' : ''}<code>{f}</code></span>)}.</> : 'The device has declared no function (yet).'}</p>
        <form onSubmit={(e) => { void submitCall(e); }}>
          <label>Function<input name="function" list="declared-functions" required maxLength={64} autoComplete="off" /></label>
          <datalist id="declared-functions">{device.functions.map((f) => <option key={f} value={f} />)}</datalist>
          <label>Argument<input name="arg" maxLength={1024} /></label>
          <button type="submit" disabled={calling}>Call</button>
        </form>
        {call && <p role={call.ok ? 'status' : 'alert'} className={call.ok ? undefined : 'error'}>{call.text}</p>}
      </section>
      <section aria-labelledby="variables-title" className="card">
        <h4 id="variables-title">Variables</h4>
        {variables.length === 0 ? <p>The device has declared no variable (yet).</p> : (
          <ul className="variables">
            {variables.map(([name, type]) => {
              const got = reads[name];
              return (
                <li key={name}>
                  <button type="button" onClick={() => { void read(name); }}>Read {name}</button> <span className="hint">({type})</span>{' '}
                  {got && <output aria-label={`Value of ${name}`} className={got.ok ? undefined : 'error'} role={got.ok ? undefined : 'alert'}>{got.text}</output>}
                </li>
              );
            })}
          </ul>
        )}
      </section>
      <section aria-labelledby="signal-title" className="card">
        <h4 id="signal-title">Signal</h4>
        <p>Makes the device's LED shine in rainbow colours, to find it among others.</p>
        <div className="buttons">
          <button type="button" onClick={() => { void sendSignal(true); }}>Signal on</button>
          <button type="button" onClick={() => { void sendSignal(false); }}>Signal off</button>
        </div>
        {signal && <p role={signal.ok ? 'status' : 'alert'} className={signal.ok ? undefined : 'error'}>{signal.text}</p>}
      </section>
    </>
  );
}
