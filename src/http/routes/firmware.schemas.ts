import { Type } from '@sinclair/typebox';
import { MAX_FIRMWARE_VERSION } from '../../domain/firmware.js';
import { FirmwareViewSchema } from '../../services/firmware/images.js';
import { Str } from '../schemas.js';
import { RolloutFields } from './rollouts.schemas.js';

/** JSON Schemas of the firmware and group routes (docs/firmware.md); they serialize the answers and feed /v1/openapi.json. */

const S = Type.String();
const I = Type.Integer();
const B = Type.Boolean();

export const P = Type.Object({ productIdOrSlug: Str(100) });
export const PV = Type.Object({ productIdOrSlug: Str(100), version: Type.Integer({ minimum: 1, maximum: MAX_FIRMWARE_VERSION }) });
export const PG = Type.Object({ productIdOrSlug: Str(100), groupName: Str(64) });

export const FirmwareRef = Type.Ref('ProductFirmware');

export const ReleaseAnswer = Type.Object({
  ...FirmwareViewSchema.properties, warnings: Type.Array(S, { description: 'What Skyport allows where Particle refuses (a version no device runs yet)' }),
  rollout: Type.Optional(Type.Ref('FirmwareRollout', { description: 'The staged rollout started instead of a release, when the request had `rollout`' })),
});

export const ReleaseBody = Type.Object({
  version: Type.Union([Type.Integer(), Str(5)]),
  product_default: Type.Optional(Type.Union([B, Str(5)])),
  groups: Type.Optional(Type.Union([Type.Array(Str(64), { maxItems: 1000 }), Str(64)])),
  'groups[]': Type.Optional(Type.Union([Type.Array(Str(64), { maxItems: 1000 }), Str(64)])),
  intelligent: Type.Optional(Type.Union([B, Str(5)])),
  signature: Type.Optional(Str(200, { description: 'Base64 of the Ed25519 signature of the whole image (needed when the product has a signing key and the upload had none)' })),
  rollout: Type.Optional(Type.Object(RolloutFields, { additionalProperties: false, description: 'Skyport: a staged rollout to the fleet (product_default: true) or to groups, instead of a release now (docs/firmware.md, "Staged rollouts")' })),
  access_token: Type.Optional(Str(200)),
});

export const EditBody = Type.Object({
  title: Type.Optional(Str(1000)),
  description: Type.Optional(Type.Union([Str(10_000), Type.Null()])),
  access_token: Type.Optional(Str(200)),
});

export const SigningKey = Type.Object({
  public_key: Type.String({ description: 'PEM (SPKI)' }), public_key_base64: Type.String({ description: 'The raw 32 bytes, base64 (what the device SDK takes)' }),
  fingerprint: S, created_at: S,
});
export const SigningKeyBody = Type.Object({ public_key: Str(2000), access_token: Type.Optional(Str(200)) });

const Count = (description: string) => Type.Integer({ description });
export const UpdateProgress = Type.Object({
  versions: Type.Array(Type.Object({
    version: I,
    total: Type.Integer({ description: 'Devices offered this version, whatever became of it' }),
    states: Type.Object({
      pending: Count('Waiting: for the device to take updates again, or for a transfer slot'),
      downloading: Count('The image is on its way to the device (or a cut transfer waits to resume)'),
      applying: Count('The device holds the checked image and applies it; the outcome comes when it is back'),
      succeeded: Count('The device came back running the version'),
      failed: Count('The device refused or failed it, came back on another version, or did not come back in time'),
    }),
  }), { description: 'Newest version first' }),
});

const ByVersion = Type.Array(Type.Object({ version: Type.Integer({ description: 'The version the devices run now (0: none reported)' }), total: I }));
export const ImpactAnswer = Type.Object({ devices: Type.Object({ firmware_update: Type.Object({ total: I, by_version: ByVersion }) }) });
export const ImpactQuery = Type.Object({
  action: Str(40),
  firmware_version: Type.Optional(Str(5)),
  groups: Type.Optional(Str(70_000)),
  product_default: Type.Optional(Str(5)),
  devices: Type.Optional(Str(260_000)),
  access_token: Type.Optional(Str(200)),
});

const GroupRef = Type.Ref('DeviceGroup');
export const OneGroup = Type.Object({ group: GroupRef });
export const GroupList = Type.Object({ groups: Type.Array(GroupRef) });
export const GroupBody = Type.Object({
  name: Type.Optional(Str(200)),
  color: Type.Optional(Type.Union([Str(20), Type.Null()])),
  description: Type.Optional(Type.Union([Str(10_000), Type.Null()])),
  access_token: Type.Optional(Str(200)),
});
export const BulkBody = Type.Object({
  action: Str(40),
  devices: Type.Array(Str(100), { maxItems: 10_000 }),
  metadata: Type.Optional(Type.Object({
    add: Type.Optional(Type.Array(Str(64), { maxItems: 1000 })),
    remove: Type.Optional(Type.Array(Str(64), { maxItems: 1000 })),
  })),
  access_token: Type.Optional(Str(200)),
});
