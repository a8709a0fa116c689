import { useEffect, useState, type ReactNode } from 'react';

/** A button that copies `text` to the clipboard (a secret, a command), and says whether it did. */
export function CopyButton({ text, label }: { text: string; label: string }) {
  const [said, setSaid] = useState<string | null>(null);
  return (
    <>
      <button type="button" onClick={() => {
        navigator.clipboard.writeText(text).then(() => setSaid('Copied.'), () => setSaid('The browser did not allow copying: select the text and copy it yourself.'));
      }}>{label}</button>
      {said && <span role="status"> {said}</span>}
    </>
  );
}

/** A link that saves `text` as a file: the data stays in the page (a blob URL), freed when it goes. */
export function DownloadLink({ name, text, type = 'text/csv', className, children }: { name: string; text: string; type?: string; className?: string; children: ReactNode }) {
  const [url, setUrl] = useState<string | null>(null);
  useEffect(() => {
    const made = URL.createObjectURL(new Blob([text], { type }));
    setUrl(made);
    return () => URL.revokeObjectURL(made);
  }, [text, type]);
  return url ? <a href={url} download={name} className={className}>{children}</a> : null;
}
