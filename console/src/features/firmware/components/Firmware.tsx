import { useState, type ReactNode } from 'react';
import { useQuery } from '@tanstack/react-query';
import type { Session } from '../../../lib/session.js';
import { firmwareQuery } from '../api/firmware.js';
import { EditFirmware, FirmwareList, type Opened } from './FirmwareList.js';
import { ReleaseFirmware } from './ReleaseFirmware.js';
import { UpdateProgress } from './UpdateProgress.js';
import { UploadFirmware } from './UploadFirmware.js';

/**
 * A product's Firmware page (docs/console.md, "Firmware"): upload a version, the versions with
 * where each is released and how many devices run it, release one to the fleet or to groups,
 * edit, download or delete one; and where the devices' updates stand.
 *
 * `rollouts`: the place of staged rollouts on this page (their waves, thresholds and progress),
 * given by app/ once the rollouts feature exists; nothing is shown until then.
 */
export function Firmware({ session, product, rollouts }: { session: Session; product: string; rollouts?: ReactNode }) {
  const list = useQuery(firmwareQuery(session, product));
  const [uploading, setUploading] = useState(false);
  const [opened, setOpened] = useState<Opened>(null);
  const openedVersion = opened && list.data?.find((f) => f.version === opened.version);
  const p = { session, product };
  return (
    <section aria-labelledby="firmware-title">
      <div className="row">
        <h3 id="firmware-title">Firmware</h3>
        <button type="button" aria-expanded={uploading} onClick={() => setUploading(!uploading)}>Upload a version</button>
      </div>
      <p>
        The application firmware the product's devices run. A device runs the version it is locked to, else the highest
        version released to its groups, else the product default; development devices are left alone.
      </p>
      {uploading && <UploadFirmware {...p} onClose={() => setUploading(false)} />}
      {list.isPending && <p>Loading…</p>}
      {list.error && <p role="alert" className="error">{list.error.message}</p>}
      {list.data && list.data.length === 0 && <p>No firmware yet: upload the binary of a version to release it.</p>}
      {list.data && list.data.length > 0 && <FirmwareList {...p} versions={list.data} onOpen={setOpened} />}
      {openedVersion && opened.kind === 'release' && <ReleaseFirmware key={`r${opened.version}`} {...p} firmware={openedVersion} onClose={() => setOpened(null)} />}
      {openedVersion && opened.kind === 'edit' && <EditFirmware key={`e${opened.version}`} {...p} firmware={openedVersion} onClose={() => setOpened(null)} />}
      <UpdateProgress {...p} />
      {rollouts}
    </section>
  );
}
