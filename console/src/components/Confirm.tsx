import { useState } from 'react';

/**
 * A destructive action asked twice, in the page: the first button shows the question and a
 * second button that does it (window.confirm is avoided: it is not part of the page, and
 * headless browsers dismiss it). When `onConfirm` answers a promise, the question closes once it
 * is kept; a refusal leaves it open, and the caller shows the error.
 */
export function ConfirmButton({ label, name, subject, question, confirmLabel, confirmName, onAsk, onConfirm, pending = false, destructive = true }: {
  label: string;
  /** Red for what cannot be undone (delete, remove, revoke); plain for what writes a new version. */
  destructive?: boolean;
  /** The first button's accessible name, when its label alone does not say what it acts on. */
  name?: string;
  /** What the action is about, added to the label for the accessible name (rows have one each). */
  subject?: string;
  question: string;
  confirmLabel: string;
  confirmName?: string;
  /** Called when the question opens (to clear an earlier answer). */
  onAsk?: () => void;
  onConfirm: () => unknown;
  pending?: boolean;
}) {
  const [asking, setAsking] = useState(false);
  if (!asking) {
    return (
      <button type="button" className={destructive ? 'danger' : undefined} aria-label={name ?? (subject ? `${label} ${subject}` : undefined)} onClick={() => { onAsk?.(); setAsking(true); }}>{label}</button>
    );
  }
  const confirm = () => {
    const done = onConfirm();
    if (done instanceof Promise) done.then(() => setAsking(false), () => undefined);
  };
  return (
    <span role="group" aria-label={question} className="confirm">
      <span>{question}</span>
      <button type="button" className={destructive ? 'danger' : undefined} aria-label={confirmName} disabled={pending} onClick={confirm}>{confirmLabel}</button>
      <button type="button" className="secondary" onClick={() => setAsking(false)}>Cancel</button>
    </span>
  );
}
