import type { FormEvent, ReactNode } from 'react';

/**
 * A card that changes one thing (a firmware version's text, a group): its heading, the fields,
 * Save and Cancel, and the refusal in words. The fields are read from the form when it is sent.
 */
export function EditCard({ id, title, onSave, pending, error, onCancel, children }: {
  /** The heading's id, which names the card. */
  id: string;
  title: string;
  onSave: (form: HTMLFormElement) => void;
  pending: boolean;
  error: Error | null;
  onCancel: () => void;
  children: ReactNode;
}) {
  function submit(e: FormEvent<HTMLFormElement>) {
    e.preventDefault();
    onSave(e.currentTarget);
  }
  return (
    <section className="card" aria-labelledby={id}>
      <h4 id={id}>{title}</h4>
      <form onSubmit={submit}>
        {children}
        <div className="buttons">
          <button type="submit" disabled={pending}>Save</button>
          <button type="button" className="secondary" onClick={onCancel}>Cancel</button>
        </div>
      </form>
      {error && <p role="alert" className="error">{error.message}</p>}
    </section>
  );
}
