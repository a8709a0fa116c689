import { useEffect, useState, type ReactNode } from 'react';

/** A button that copies `text` to the clipboard, and says whether it did. */
export function CopyButton({ text, label }: { text: string; label: string }) {
  const [said, setSaid] = useState<string | null>(null);
  return (
    <>
      <button type="button" aria-label={label} onClick={() => {
        navigator.clipboard.writeText(text).then(() => setSaid('Copied.'), () => setSaid('Copying was refused by the browser: select the text and copy it.'));
      }}>Copy</button>
      {said && <span role="status"> {said}</span>}
    </>
  );
}

/** A link that saves `text` as a file: the data stays in the page (a blob URL), freed when it goes. */
export function DownloadLink({ name, text, children }: { name: string; text: string; children: ReactNode }) {
  const [url, setUrl] = useState<string | null>(null);
  useEffect(() => {
    const made = URL.createObjectURL(new Blob([text], { type: 'text/csv' }));
    setUrl(made);
    return () => URL.revokeObjectURL(made);
  }, [text]);
  return url ? <a href={url} download={name}>{children}</a> : null;
}
