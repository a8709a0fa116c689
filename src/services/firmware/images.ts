import { createHash } from 'node:crypto';
import { Type, type Static, type TString } from '@sinclair/typebox';
import { DomainError } from '../../domain/errors.js';
import { MAX_DESCRIPTION_LENGTH, MAX_TITLE_LENGTH, parseFirmwareVersion, validateText } from '../../domain/firmware.js';
import type { Clock } from '../../platform/clock.js';
import type { FirmwareRecord, FirmwareRepository } from '../../repositories/firmware.repository.js';
import type { ProductRecord } from '../../repositories/products.repository.js';
import type { Db } from '../../storage/db.js';
import type { AuditService } from '../audit.service.js';
import { checkModule } from './module.js';
import { productEvent, type Actor, type Publish } from './shared.js';
import { parseSignature, verifies } from './signing.js';

/** The username of an account by its id (undefined when it is gone). */
export type UserNames = (id: string) => Promise<string | undefined>;

const S = Type.String();
const I = Type.Integer();
const B = Type.Boolean();
const orNull = <T extends TString>(t: T) => Type.Unsafe<Static<T> | null>({ ...t, nullable: true });

/**
 * A firmware version as the API answers it: Particle's fields (both spellings of the upload
 * time) and Skyport's. It serializes every firmware answer (schema `ProductFirmware`) and is the
 * type the views are built as.
 */
export const FirmwareViewSchema = Type.Object({
  version: I, title: S, description: S, name: Type.String({ description: 'The uploaded file\'s name' }), size: I,
  sha256: Type.String({ description: 'SHA-256 of the whole image, hex' }), platform_id: I, product_id: I,
  device_count: Type.Integer({ description: 'Devices of the product running this version now' }),
  current: Type.Boolean({ description: 'Particle\'s older name for product_default' }), product_default: B,
  groups: Type.Array(S, { description: 'The groups it is released to' }), intelligent: B, released_at: orNull(S),
  signed: Type.Boolean({ description: 'Whether the image carries a signature' }), uploaded_at: S, uploaded_on: S,
  uploaded_by: Type.Object({ username: orNull(S), kind: S, id: S }), updated_at: S,
}, { $id: 'ProductFirmware' });

export type FirmwareView = Static<typeof FirmwareViewSchema>;

export interface Upload {
  image: Buffer;
  fileName: string | undefined;
  fields: Record<string, unknown>;
}

/** Product firmware images (docs/firmware.md, "Images"): upload with the module checks, list, edit, delete, download. */
export function createImages(deps: { db: Db; repo: FirmwareRepository; clock: Clock; audit: AuditService; publish: Publish; userNames: UserNames; maxBytes: number }) {
  const { repo, clock } = deps;

  async function view(f: FirmwareRecord, counts: Map<number, number>): Promise<FirmwareView> {
    const username = f.uploadedBy.kind === 'user' ? (await deps.userNames(f.uploadedBy.id)) ?? null : null;
    const uploaded = f.uploadedAt.toISOString();
    return {
      version: f.version, title: f.title, description: f.description, name: f.fileName, size: f.size, sha256: f.sha256, platform_id: f.platformId,
      product_id: f.productId, device_count: counts.get(f.version) ?? 0,
      // `current` is Particle's older name for the product default.
      current: f.productDefault, product_default: f.productDefault, groups: f.groups, intelligent: f.intelligent,
      released_at: f.releasedAt?.toISOString() ?? null, signed: f.signature !== null,
      uploaded_at: uploaded, uploaded_on: uploaded, uploaded_by: { username, ...f.uploadedBy }, updated_at: f.updatedAt.toISOString(),
    };
  }

  async function find(product: ProductRecord, version: number): Promise<FirmwareRecord> {
    const f = await repo.find(product.id, version);
    if (!f) throw new DomainError('not_found', `The product has no firmware version ${version}`);
    return f;
  }

  const one = async (f: FirmwareRecord) => view(f, await repo.deviceCounts(f.productId));

  return {
    view,
    find,
    maxBytes: deps.maxBytes,

    /**
     * A new version: the binary must be application firmware of the product's platform whose
     * module suffix names this product and this version, with a CRC-32 that holds; with a
     * signing key, a signature the key verifies. A version is uploaded once.
     */
    async upload(product: ProductRecord, u: Upload, actor: Actor): Promise<FirmwareView> {
      const version = parseFirmwareVersion(u.fields.version);
      const title = validateText(u.fields.title, 'title', MAX_TITLE_LENGTH) || `Version ${version}`;
      const description = validateText(u.fields.description, 'description', MAX_DESCRIPTION_LENGTH);
      if (u.image.length > deps.maxBytes) throw new DomainError('payload_too_large', `The binary is ${u.image.length} bytes; the largest this server takes is ${deps.maxBytes} (FIRMWARE_MAX_BYTES)`);
      await checkModule(u.image, { productId: product.id, platformId: product.platformId, version });
      const signature = parseSignature(u.fields.signature);
      const key = await repo.signingKey(product.id);
      if (key && !signature) throw new DomainError('invalid_signature', 'The product has a firmware signing key: send `signature`, base64 of the Ed25519 signature of the whole image');
      if (key && signature && !verifies(key.publicKey, u.image, signature)) throw new DomainError('invalid_signature', "The signature is not the product's signing key's signature of this image");
      const now = clock.now();
      const fileName = (u.fileName ?? '').replace(/[^\w.-]/g, '_').slice(0, 100) || 'firmware.bin';
      const stored = await repo.insert({
        productId: product.id, version, title, description, fileName, size: u.image.length, sha256: createHash('sha256').update(u.image).digest('hex'),
        image: u.image, platformId: product.platformId, signature, uploadedAt: now, uploadedBy: actor.account, updatedAt: now,
      });
      if (!stored) throw new DomainError('conflict', `The product has a firmware version ${version} already: a version is uploaded once; give the new binary a higher PRODUCT_VERSION`);
      await deps.audit.record({ account: actor.account, type: 'firmware.uploaded', ip: actor.ip, details: { product_id: product.id, version, size: u.image.length } });
      // Particle sends the version as text in this event.
      await deps.publish(productEvent(clock, product.id, 'particle/firmware/create', { version: String(version) }));
      return one(await find(product, version));
    },

    async list(product: ProductRecord): Promise<FirmwareView[]> {
      const [all, counts] = await Promise.all([repo.list(product.id), repo.deviceCounts(product.id)]);
      return Promise.all(all.map((f) => view(f, counts)));
    },

    get: async (product: ProductRecord, version: number): Promise<FirmwareView> => one(await find(product, version)),

    async edit(product: ProductRecord, version: number, body: { title?: unknown; description?: unknown }): Promise<FirmwareView> {
      const change: { title?: string; description?: string } = {};
      if (body.title !== undefined) change.title = validateText(body.title, 'title', MAX_TITLE_LENGTH, true);
      if (body.description !== undefined) change.description = validateText(body.description, 'description', MAX_DESCRIPTION_LENGTH);
      if (Object.keys(change).length === 0) throw new DomainError('invalid_request', 'Nothing to change: send title or description');
      if (!(await repo.update(product.id, version, change, clock.now()))) throw new DomainError('not_found', `The product has no firmware version ${version}`);
      return one(await find(product, version));
    },

    /** Deletes a version never released and to which no device is locked. */
    async remove(product: ProductRecord, version: number, actor: Actor): Promise<void> {
      await deps.db.transaction(async (tx) => {
        const f = await repo.find(product.id, version, tx, true);
        if (!f) throw new DomainError('not_found', `The product has no firmware version ${version}`);
        if (f.releasedAt) throw new DomainError('firmware_in_use', `Version ${version} has been released or rolled out (first on ${f.releasedAt.toISOString()}): a released version stays, so that what devices ran can be told and released again`);
        const locked = await repo.lockedTo(product.id, version, tx);
        if (locked > 0) throw new DomainError('firmware_in_use', `${locked} device${locked === 1 ? ' is' : 's are'} locked to version ${version}: unlock ${locked === 1 ? 'it' : 'them'} first`);
        await repo.delete(product.id, version, tx);
        await deps.audit.record({ account: actor.account, type: 'firmware.deleted', ip: actor.ip, details: { product_id: product.id, version } }, tx);
      });
    },

    async download(product: ProductRecord, version: number): Promise<{ image: Buffer; fileName: string }> {
      const f = await find(product, version);
      const image = await repo.image(product.id, version);
      if (!image) throw new DomainError('not_found', `The product has no firmware version ${version}`);
      return { image, fileName: f.fileName };
    },
  };
}

export type Images = ReturnType<typeof createImages>;
