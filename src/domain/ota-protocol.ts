import { BadPayload, jsonObject } from './device-protocol.js';

/**
 * The firmware transfer of docs/device-protocol.md ("Firmware updates") as pure functions: the
 * `begin` offer, the binary chunk header, and the checks of what the device answers. No MQTT here.
 */

/** Transfer ids are 8 characters (6 random bytes, base64url), so that a chunk's header has a fixed size. */
export const TRANSFER_ID_LENGTH = 8;
/** A chunk's payload: the transfer id (8 ASCII bytes), the offset (u32 big-endian), then the bytes. */
export const CHUNK_HEADER_BYTES = TRANSFER_ID_LENGTH + 4;
/** The chunk size the cloud offers when the device's packet limit allows it. */
export const DEFAULT_CHUNK_BYTES = 4096;
/** The smallest chunk a device may ask for. */
export const MIN_CHUNK_BYTES = 64;
/** Chunks the cloud sends beyond the device's last acknowledgement. */
export const DEFAULT_WINDOW = 8;
/** Images larger than this cannot be addressed by the 32-bit offset of a chunk. */
export const MAX_IMAGE_BYTES = 0xffff_ffff;

/** cloud → device `cloud/ota/begin`. */
export interface OtaBegin {
  id: string;
  version: number;
  size: number;
  /** Of the whole image, hex. */
  sha256: string;
  chunk_size: number;
  window: number;
  /** Ed25519 signature of the image, base64; null when the release carries none. */
  signature: string | null;
  /** The product forces updates: a device that disabled them takes this one all the same. */
  forced: boolean;
}

/** device → cloud, on `ota/ready`, `ota/ack` and `ota/done`. */
export type OtaMessage =
  | { kind: 'ready'; id: string; offset: number; chunkSize?: number }
  | { kind: 'ack'; id: string; offset: number }
  | { kind: 'done'; id: string }
  | { kind: 'refused'; id: string; on: 'ready' | 'done'; error: string };

/** The error a device refuses an offer with while it does not take updates (`ready {id, error}`). */
export const UPDATES_DISABLED = 'updates_disabled';

const isOffset = (v: unknown): v is number => Number.isInteger(v) && (v as number) >= 0 && (v as number) <= MAX_IMAGE_BYTES;
const ERROR_NAME = /^[a-z0-9_]{1,64}$/;

function transferId(o: Record<string, unknown>): string {
  if (typeof o.id !== 'string' || o.id.length !== TRANSFER_ID_LENGTH) throw new BadPayload(`id must be the ${TRANSFER_ID_LENGTH}-character id of the transfer`);
  return o.id;
}

function refusal(o: Record<string, unknown>, id: string, on: 'ready' | 'done'): OtaMessage | null {
  if (o.error === undefined) return null;
  if (typeof o.error !== 'string' || !ERROR_NAME.test(o.error)) throw new BadPayload('error must be a name of 1-64 lower-case letters, digits or underscores');
  return { kind: 'refused', id, on, error: o.error };
}

/** What the device sent on `ota/<path>`; throws BadPayload when it is not what the protocol says. */
export function parseOtaMessage(path: 'ready' | 'ack' | 'done', payload: Buffer): OtaMessage {
  const o = jsonObject(payload);
  const id = transferId(o);
  if (path === 'done') return refusal(o, id, 'done') ?? { kind: 'done', id };
  if (path === 'ready') {
    const refused = refusal(o, id, 'ready');
    if (refused) return refused;
    if (!isOffset(o.offset)) throw new BadPayload('offset must be the number of bytes of the image the device holds already (0 for none)');
    if (o.chunk_size === undefined) return { kind: 'ready', id, offset: o.offset };
    if (!Number.isInteger(o.chunk_size) || (o.chunk_size as number) < MIN_CHUNK_BYTES) throw new BadPayload(`chunk_size must be a whole number of at least ${MIN_CHUNK_BYTES} bytes`);
    return { kind: 'ready', id, offset: o.offset, chunkSize: o.chunk_size as number };
  }
  if (!isOffset(o.offset)) throw new BadPayload('offset must be the number of bytes of the image received so far');
  return { kind: 'ack', id, offset: o.offset };
}

/** The header of a chunk's payload (the bytes follow it). */
export function chunkHeader(id: string, offset: number): Buffer {
  const header = Buffer.allocUnsafe(CHUNK_HEADER_BYTES);
  header.write(id, 0, TRANSFER_ID_LENGTH, 'latin1');
  header.writeUInt32BE(offset, TRANSFER_ID_LENGTH);
  return header;
}

/** A chunk as the device reads it; null when the payload is shorter than its header. */
export function parseChunk(payload: Buffer): { id: string; offset: number; data: Buffer } | null {
  if (payload.length < CHUNK_HEADER_BYTES) return null;
  return {
    id: payload.toString('latin1', 0, TRANSFER_ID_LENGTH),
    offset: payload.readUInt32BE(TRANSFER_ID_LENGTH),
    data: payload.subarray(CHUNK_HEADER_BYTES),
  };
}

/** The offer's body, checked where the device reads it (SDK): null when it is not one. */
export function parseBegin(body: Record<string, unknown>): OtaBegin | null {
  const { id, version, size, sha256, chunk_size: chunk, window, signature, forced } = body;
  if (typeof id !== 'string' || id.length !== TRANSFER_ID_LENGTH || !Number.isInteger(version) || !isOffset(size)) return null;
  if (typeof sha256 !== 'string' || !/^[0-9a-f]{64}$/.test(sha256) || !Number.isInteger(chunk) || !Number.isInteger(window)) return null;
  if (signature !== null && typeof signature !== 'string') return null;
  return { id, version: version as number, size, sha256, chunk_size: chunk as number, window: window as number, signature, forced: forced === true };
}
