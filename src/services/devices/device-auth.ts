import { isDeviceId } from '../../domain/devices.js';
import type { Secrets } from '../../platform/secrets.js';
import type { DeviceRecord, DevicesRepository } from '../../repositories/devices.repository.js';
import { createBatcher, windowFor } from '../../storage/batcher.js';
import type { Db } from '../../storage/db.js';

/**
 * A device's MQTT credentials (docs/device-protocol.md, "Connecting"): its id and the secret
 * shown at provisioning, compared as SHA-256 digests in constant time. Secrets are 128-bit
 * random, so a fast hash is enough (docs/architecture.md, "Devices: the gateway and the bus");
 * an unknown id costs the same digest.
 */
export function createDeviceAuthenticator(deps: { db: Db; repo: Pick<DevicesRepository, 'findByIds'>; secrets: Secrets }) {
  const { db, repo, secrets } = deps;
  // Connects that arrive together are looked up together (a reconnect storm), past the record
  // cache: a storm must not fill memory with every device.
  const connecting = createBatcher<string, DeviceRecord | undefined>(async (ids) => {
    const found = new Map((await repo.findByIds([...new Set(ids)], db)).map((d) => [d.id, d]));
    return ids.map((id) => found.get(id));
  }, { maxBatch: 1000, inFlight: 1, waitMs: windowFor(db.kind) });

  return {
    async authenticate(id: string, secret: string): Promise<DeviceRecord | null> {
      const d = isDeviceId(id) ? await connecting.add(id.toLowerCase()) : undefined;
      const digest = secrets.sha256(secret);
      const same = secrets.sameDigest(digest, d?.secretHash ?? '0'.repeat(64));
      return d && same && secret.length > 0 ? d : null;
    },
  };
}

export type DeviceAuthenticator = ReturnType<typeof createDeviceAuthenticator>;
