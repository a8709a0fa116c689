import { useState } from 'react';

/** Copies a secret to the clipboard and says so; says so too when the browser refuses. */
export function CopyButton({ text, label = 'Copy' }: { text: string; label?: string }) {
  const [said, setSaid] = useState<string | null>(null);
  async function copy() {
    try {
      await navigator.clipboard.writeText(text);
      setSaid('Copied.');
    } catch {
      setSaid('The browser did not allow copying: select the text and copy it yourself.');
    }
  }
  return (
    <>
      <button type="button" onClick={() => { void copy(); }}>{label}</button>
      {said && <span role="status">{said}</span>}
    </>
  );
}
