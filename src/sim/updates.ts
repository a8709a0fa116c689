import type { Device } from '../sdk/index.js';
import { productVersionOf } from './module-info.js';

/**
 * Shares of updates a simulated device fails, to try a rollout's thresholds (docs/sdk.md, "The
 * simulator"): it refuses the offer, its check of the image fails, it applies the image and never
 * comes back, or it comes back on its old version (as a device whose new firmware did not boot).
 */
export interface UpdateFailures { refuse: number; check: number; vanish: number; revert: number }

export const NO_FAILURES: UpdateFailures = { refuse: 0, check: 0, vanish: 0, revert: 0 };
const KINDS = Object.keys(NO_FAILURES) as Array<keyof UpdateFailures>;

/** `refuse=0.1,check=0.05,vanish=0.05,revert=0.02`: each a share from 0 to 1, together at most 1. */
export function parseUpdateFailures(spec: string): UpdateFailures {
  const out = { ...NO_FAILURES };
  for (const part of spec.split(',').map((p) => p.trim()).filter(Boolean)) {
    const [kind, raw] = part.split('=') as [string, string | undefined];
    if (!(KINDS as string[]).includes(kind)) throw new Error(`--fail-updates: "${kind}" is not one of ${KINDS.join(', ')}`);
    const share = Number(raw);
    if (raw === undefined || raw.trim() === '' || !Number.isFinite(share) || share < 0 || share > 1) throw new Error(`--fail-updates: ${kind} takes a share from 0 to 1, such as ${kind}=0.05`);
    out[kind as keyof UpdateFailures] = share;
  }
  if (KINDS.reduce((n, k) => n + out[k], 0) > 1) throw new Error('--fail-updates: the shares add up to more than 1');
  return out;
}

/** What the simulated devices did with the updates offered to them (counted as it happens). */
export interface UpdateTally { offered: number; applied: number; refused: number; checkFailed: number; vanished: number; reverted: number }

export const emptyTally = (): UpdateTally => ({ offered: 0, applied: 0, refused: 0, checkFailed: 0, vanished: 0, reverted: 0 });

type Fate = 'apply' | keyof UpdateFailures;

/**
 * How a simulated device takes updates: it applies any image by the product version in its module
 * suffix (read with Particle's parser) and restarts on it; an image that is not a module whose
 * CRC-32 holds fails its check (`bad_module`). Each update's fate is drawn once, when first offered
 * (a resumed offer of the same image keeps it), from `failures`.
 */
export function simulateUpdates(device: Device, failures: UpdateFailures, tally: UpdateTally, random: () => number = Math.random): void {
  const fates = new Map<string, Fate>();
  const fateOf = (sha256: string): Fate => {
    let fate = fates.get(sha256);
    if (!fate) {
      const r = random();
      let edge = 0;
      fate = KINDS.find((k) => r < (edge += failures[k])) ?? 'apply';
      fates.set(sha256, fate);
      tally.offered += 1;
    }
    return fate;
  };
  device.onFirmwareOffer((offer) => {
    if (fateOf(offer.sha256) !== 'refuse') return true;
    tally.refused += 1;
    return false;
  });
  // The module's product version, read once per image (the check reads it, the update applies it).
  const versions = new Map<string, number | null>();
  device.onFirmwareCheck(async (image, offer) => {
    const version = await productVersionOf(image);
    versions.set(offer.sha256, version);
    const fate = fateOf(offer.sha256);
    if (fate !== 'check' && version !== null) return null;
    tally.checkFailed += 1;
    return fate === 'check' ? 'check_failed' : 'bad_module';
  });
  device.onFirmwareUpdate(async (update) => {
    const fate = fateOf(update.sha256);
    if (fate === 'vanish') {
      tally.vanished += 1;
      return device.close();
    }
    if (fate === 'revert') {
      tally.reverted += 1;
      // Restarted on what it ran before: the new image did not boot.
      return device.restart();
    }
    tally.applied += 1;
    return update.apply(versions.get(update.sha256) ?? update.version);
  });
}
