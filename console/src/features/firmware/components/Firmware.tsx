import { useState } from 'react';
import { useQuery } from '@tanstack/react-query';
import type { Session } from '../../../lib/session.js';
import { firmwareQuery } from '../api/firmware.js';
import { EditFirmware, FirmwareList, type Opened } from './FirmwareList.js';
import { ReleaseFirmware } from './ReleaseFirmware.js';
import { Rollouts } from './Rollouts.js';
import { UpdateProgress } from './UpdateProgress.js';
import { UploadFirmware } from './UploadFirmware.js';

/**
 * A product's Firmware page (docs/console.md, "Firmware"): upload a version, the versions with
 * where each is released and how many devices run it, release one to the fleet or to groups,
 * edit, download or delete one; where the devices' updates stand; and staged rollouts.
 */
export function Firmware({ session, product }: { session: Session; product: string }) {
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
      <Rollouts {...p} />
    </section>
  );
}
