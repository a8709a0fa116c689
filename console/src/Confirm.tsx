import { useState } from 'react';

/**
 * A destructive action asked twice, in the page: the first button shows the question and a
 * second button that does it (window.confirm is avoided: it is not part of the page, and
 * headless browsers dismiss it).
 */
export function ConfirmButton({ label, subject, question, confirmLabel, onConfirm, pending = false }: {
  label: string;
  /** What the action is about, for the button's accessible name (several rows have one each). */
  subject?: string;
  question: string;
  confirmLabel: string;
  onConfirm: () => void;
  pending?: boolean;
}) {
  const [asking, setAsking] = useState(false);
  if (!asking) return <button type="button" className="danger" aria-label={subject ? `${label} ${subject}` : undefined} onClick={() => setAsking(true)}>{label}</button>;
  return (
    <span role="group" aria-label={question} className="confirm">
      <span>{question}</span>
      <button type="button" className="danger" disabled={pending} onClick={onConfirm}>{confirmLabel}</button>
      <button type="button" className="secondary" onClick={() => setAsking(false)}>Cancel</button>
    </span>
  );
}
