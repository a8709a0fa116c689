import { useState } from 'react';
import { useMutation, useQueryClient } from '@tanstack/react-query';
import type { Session } from '../../../lib/session.js';
import { ConfirmButton } from '../../../components/Confirm.js';
import { EditCard } from '../../../components/EditCard.js';
import { deleteFirmware, downloadFirmware, editFirmware, firmwareKeys, type FirmwareVersion } from '../api/firmware.js';
import { plural, releasedTo, sizeInWords, uploadedBy, when } from '../utils/words.js';

/** What a row asks the page to open below the list. */
export type Opened = { kind: 'release' | 'edit'; version: number } | null;

/**
 * The product's versions, newest first: what each is, how many devices run it, where it is
 * released, who uploaded it and when; release, edit, download, and delete a version never
 * released.
 */
export function FirmwareList({ session, product, versions, onOpen }: { session: Session; product: string; versions: FirmwareVersion[]; onOpen: (o: Opened) => void }) {
  const client = useQueryClient();
  const remove = useMutation({
    mutationFn: (version: number) => deleteFirmware(session, product, version),
    onSuccess: () => client.invalidateQueries({ queryKey: firmwareKeys.of(product) }),
  });
  const [saving, setSaving] = useState<number | null>(null);
  const [downloadError, setDownloadError] = useState<string | null>(null);

  async function download(f: FirmwareVersion) {
    setSaving(f.version);
    setDownloadError(null);
    try {
      const blob = await downloadFirmware(session, product, f.version);
      // Saved from the page: a plain link would need the token in its address.
      const url = URL.createObjectURL(blob);
      const a = document.createElement('a');
      a.href = url;
      a.download = f.name;
      a.click();
      setTimeout(() => URL.revokeObjectURL(url), 60_000);
    } catch (err) {
      setDownloadError((err as Error).message);
    } finally {
      setSaving(null);
    }
  }

  return (
    <>
      {remove.error && <p role="alert" className="error">{remove.error.message}</p>}
      {downloadError && <p role="alert" className="error">{downloadError}</p>}
      <div className="table-wrap">
        <table>
          <caption className="sr-only">Firmware versions, newest first</caption>
          <thead>
            <tr><th scope="col">Version</th><th scope="col">Size</th><th scope="col">Running it</th><th scope="col">Released to</th><th scope="col">Uploaded</th><th scope="col">Actions</th></tr>
          </thead>
          <tbody>
            {versions.map((f) => (
              <tr key={f.version}>
                <th scope="row">
                  {f.version} <span>{f.title}</span>
                  {f.description && <span className="hint">{f.description}</span>}
                  {f.signed && <span className="hint">signed</span>}
                </th>
                <td>{sizeInWords(f.size)}</td>
                <td>{plural(f.device_count, 'device')}</td>
                <td>{releasedTo(f)}</td>
                <td>{when(f.uploaded_at)}<span className="hint">by {uploadedBy(f.uploaded_by)}</span></td>
                <td>
                  <div className="row-actions">
                    <button type="button" aria-label={`Release version ${f.version}`} onClick={() => onOpen({ kind: 'release', version: f.version })}>Release…</button>
                    <button type="button" className="secondary" aria-label={`Edit version ${f.version}`} onClick={() => onOpen({ kind: 'edit', version: f.version })}>Edit</button>
                    <button type="button" className="secondary" aria-label={`Download version ${f.version}`} disabled={saving === f.version} onClick={() => { void download(f); }}>Download</button>
                    {f.released_at === null && (
                      <ConfirmButton
                        label="Delete" name={`Delete version ${f.version}`}
                        question={`Delete version ${f.version}? Its binary goes; the version can be uploaded again.`}
                        confirmLabel="Yes, delete it" pending={remove.isPending} onAsk={() => remove.reset()}
                        onConfirm={() => remove.mutateAsync(f.version)}
                      />
                    )}
                  </div>
                </td>
              </tr>
            ))}
          </tbody>
        </table>
      </div>
    </>
  );
}

/** A version's title and description (PUT …/firmware/:version); the binary never changes. */
export function EditFirmware({ session, product, firmware: f, onClose }: { session: Session; product: string; firmware: FirmwareVersion; onClose: () => void }) {
  const client = useQueryClient();
  const save = useMutation({
    mutationFn: (body: { title: string; description: string | null }) => editFirmware(session, product, f.version, body),
    onSuccess: async () => {
      await client.invalidateQueries({ queryKey: firmwareKeys.of(product) });
      onClose();
    },
  });
  function saved(form: HTMLFormElement) {
    const f = new FormData(form);
    const description = String(f.get('description')).trim();
    save.mutate({ title: String(f.get('title')).trim(), description: description === '' ? null : description });
  }
  return (
    <EditCard id="edit-firmware-title" title={`Edit version ${f.version}`} onSave={saved} pending={save.isPending} error={save.error} onCancel={onClose}>
      <label>Title<input name="title" defaultValue={f.title} required maxLength={100} /></label>
      <label>Description<textarea name="description" defaultValue={f.description} maxLength={2000} rows={3} /></label>
    </EditCard>
  );
}
