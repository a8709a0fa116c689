import { useState, type ChangeEvent, type FormEvent } from 'react';
import { useMutation, useQueryClient } from '@tanstack/react-query';
import { ApiError } from '../../../lib/api-error.js';
import type { Session } from '../../../lib/session.js';
import { firmwareKeys, uploadFirmware, type UploadFields } from '../api/firmware.js';
import { productVersionOf } from '../utils/module-version.js';
import { reasonInWords, sizeInWords } from '../utils/words.js';

/** An upload's refusal in words: the module check that failed as a heading, then the server's own sentence. */
function refusal(err: Error): string {
  if (!(err instanceof ApiError)) return err.message;
  const reason = reasonInWords(err.body.reason);
  return reason ? `Refused, ${reason}: ${err.message}` : err.message;
}

/**
 * "Upload a version": the binary the compiler made (its product version, read from the file's
 * module suffix, fills the version field), a title and a description. The server checks the
 * module (docs/firmware.md, "Module checks") and says why it refuses one.
 */
export function UploadFirmware({ session, product, onClose }: { session: Session; product: string; onClose: () => void }) {
  const client = useQueryClient();
  const [version, setVersion] = useState('');
  const [file, setFile] = useState<File | null>(null);
  const send = useMutation({
    mutationFn: (u: UploadFields) => uploadFirmware(session, product, u),
    onSuccess: () => client.invalidateQueries({ queryKey: firmwareKeys.of(product) }),
  });

  async function chosen(e: ChangeEvent<HTMLInputElement>) {
    const f = e.target.files?.[0] ?? null;
    setFile(f);
    send.reset();
    if (!f) return;
    const read = productVersionOf(await f.arrayBuffer());
    if (read !== null) setVersion(String(read));
  }

  function submit(e: FormEvent<HTMLFormElement>) {
    e.preventDefault();
    if (!file) return;
    const form = e.currentTarget;
    const f = new FormData(form);
    send.mutate(
      { file, version: Number(version), title: String(f.get('title')).trim(), description: String(f.get('description')).trim() },
      {
        onSuccess: () => {
          form.reset();
          setFile(null);
          setVersion('');
        },
      },
    );
  }

  return (
    <section className="card" aria-labelledby="upload-title">
      <h4 id="upload-title">Upload a version</h4>
      <p>
        The <code>.bin</code> the compiler made for this product: its module suffix must name this product
        (<code>PRODUCT_ID</code>) and the version below (<code>PRODUCT_VERSION</code>). A version is uploaded once.
      </p>
      <form onSubmit={submit}>
        <label>Firmware binary<input type="file" name="file" accept=".bin,application/octet-stream" required onChange={(e) => { void chosen(e); }} /></label>
        {file && <p className="hint">{file.name}, {sizeInWords(file.size)}</p>}
        <label>Version
          <input name="version" type="number" inputMode="numeric" min={1} max={65535} step={1} required value={version} onChange={(e) => setVersion(e.target.value)} aria-describedby="version-hint" />
          <span id="version-hint" className="hint">A whole number from 1 to 65535: the product version in the binary, filled in from the file when it carries one.</span>
        </label>
        <label>Title<input name="title" maxLength={100} placeholder={version ? `Version ${version}` : ''} /></label>
        <label>Description<textarea name="description" maxLength={2000} rows={3} /></label>
        <div className="buttons">
          <button type="submit" disabled={send.isPending || !file}>{send.isPending ? 'Uploading…' : 'Upload'}</button>
          <button type="button" className="secondary" onClick={onClose}>Close</button>
        </div>
      </form>
      {send.data && <p role="status">Version {send.data.version} uploaded: {send.data.title}, {sizeInWords(send.data.size)}. Release it from the list.</p>}
      {send.error && <p role="alert" className="error">{refusal(send.error)}</p>}
    </section>
  );
}
