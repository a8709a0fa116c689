import type { ReactNode } from 'react';
import { CopyButton } from './copy.js';

/**
 * A secret the API gives once (a client secret, a device secret, a token): shown here until the
 * user moves on, with a copy button, and kept nowhere else (not in the query cache, not logged),
 * so that reloading the page does not show it again.
 */
export function SecretOnce({ label, value, children, onDone }: { label: string; value: string; children?: ReactNode; onDone: () => void }) {
  return (
    <div className="card secret" role="region" aria-label={label}>
      <p className="warning"><strong>Copy it now: it will not be shown again.</strong></p>
      {children}
      <p>{label}: <code>{value}</code></p>
      <div className="row">
        <CopyButton text={value} label={`Copy ${label.toLowerCase()}`} />
        <button type="button" className="secondary" onClick={onDone}>Done</button>
      </div>
    </div>
  );
}
