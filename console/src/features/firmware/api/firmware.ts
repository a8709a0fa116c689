import { queryOptions } from '@tanstack/react-query';
import { api, binary, upload, type ApiAnswer } from '../../../lib/api-client.js';
import type { Session } from '../../../lib/session.js';

/** A firmware version as the API answers it (docs/firmware.md, "Images"). */
export type FirmwareVersion = ApiAnswer<'/v1/products/{productIdOrSlug}/firmware'>[number];
export type Released = ApiAnswer<'/v1/products/{productIdOrSlug}/firmware/release', 'put'>;
export type Impact = ApiAnswer<'/v1/products/{productIdOrSlug}/impact'>['devices']['firmware_update'];
export type VersionProgress = ApiAnswer<'/v1/products/{productIdOrSlug}/firmware/updates'>['versions'][number];

/** The firmware's query keys, by product: everything of it (to refresh after a change), the list, the impact of a release, the updates' progress. */
export const firmwareKeys = {
  of: (product: string) => ['firmware', product] as const,
  list: (product: string) => ['firmware', product, 'list'] as const,
  impact: (product: string, release: ReleaseChoice) => ['firmware', product, 'impact', release] as const,
  updates: (product: string) => ['firmware', product, 'updates'] as const,
};

/** What a release sends: the version, as the product default or not, to exactly these groups, at once or not. */
export interface ReleaseChoice {
  version: number;
  productDefault: boolean;
  groups: string[];
  intelligent: boolean;
}

const at = (product: string) => ({ params: { path: { productIdOrSlug: product } } });
const atVersion = (product: string, version: number) => ({ params: { path: { productIdOrSlug: product, version } } });

export const firmwareQuery = (session: Session, product: string) => queryOptions({
  queryKey: firmwareKeys.list(product),
  queryFn: () => api(session.token).GET('/v1/products/{productIdOrSlug}/firmware', at(product)),
});

/** The product's updates counted by version and by where each stands (GET …/firmware/updates). */
export const updatesQuery = (session: Session, product: string) => queryOptions({
  queryKey: firmwareKeys.updates(product),
  queryFn: async () => (await api(session.token).GET('/v1/products/{productIdOrSlug}/firmware/updates', at(product))).versions,
});

/** How many devices the release would update, counted by the version they run (GET …/impact, Particle's action). */
export const impactQuery = (session: Session, product: string, release: ReleaseChoice) => queryOptions({
  queryKey: firmwareKeys.impact(product, release),
  queryFn: async () => (await api(session.token).GET('/v1/products/{productIdOrSlug}/impact', {
    params: {
      path: { productIdOrSlug: product },
      query: {
        action: 'edit_groups_for_firmware', firmware_version: String(release.version),
        groups: release.groups.join(','), product_default: String(release.productDefault),
      },
    },
  })).devices.firmware_update,
});

/** The upload's fields: the binary as `file` (as particle-api-js sends it), version, title, description. */
export interface UploadFields { file: File; version: number; title: string; description: string }

export function uploadFirmware(session: Session, product: string, u: UploadFields): Promise<FirmwareVersion> {
  const form = new FormData();
  form.append('version', String(u.version));
  if (u.title !== '') form.append('title', u.title);
  if (u.description !== '') form.append('description', u.description);
  form.append('file', u.file, u.file.name);
  return upload(session.token, '/v1/products/{productIdOrSlug}/firmware', { productIdOrSlug: product }, form);
}

export const editFirmware = (session: Session, product: string, version: number, body: { title?: string; description?: string | null }) =>
  api(session.token).PUT('/v1/products/{productIdOrSlug}/firmware/{version}', { ...atVersion(product, version), body });

export const deleteFirmware = (session: Session, product: string, version: number) =>
  api(session.token).DELETE('/v1/products/{productIdOrSlug}/firmware/{version}', atVersion(product, version));

export const releaseFirmware = (session: Session, product: string, r: ReleaseChoice): Promise<Released> =>
  api(session.token).PUT('/v1/products/{productIdOrSlug}/firmware/release', {
    ...at(product),
    body: { version: r.version, product_default: r.productDefault, groups: r.groups, intelligent: r.intelligent },
  });

export const downloadFirmware = (session: Session, product: string, version: number): Promise<Blob> =>
  binary(session.token, '/v1/products/{productIdOrSlug}/firmware/{version}/binary', { productIdOrSlug: product, version });
