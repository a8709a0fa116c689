import type { FastifyInstance, FastifyRequest } from 'fastify';
import { Type } from '@sinclair/typebox';
import { DomainError } from '../../domain/errors.js';
import { accountOf } from '../../services/audit-account.js';
import { progressByVersion } from '../../domain/firmware-updates.js';
import type { Actor, Firmware } from '../../services/firmware/index.js';
import type { FirmwareUpdates } from '../../services/firmware/updates/index.js';
import type { Upload } from '../../services/firmware/images.js';
import { authOf, type Guard } from '../auth.js';
import { productOf } from '../product-scope.js';
import { NoContent, errorResponses } from '../schemas.js';
import {
  EditBody, FirmwareRef, ImpactAnswer, ImpactQuery, P, PV, ReleaseAnswer, ReleaseBody, SigningKey, SigningKeyBody, UpdateProgress,
} from './firmware.schemas.js';
import { multipartRoutes } from '../multipart.js';

/** Who makes a change, for the audit log. */
export const actorOf = (req: FastifyRequest): Actor => ({ account: accountOf(authOf(req).subject), ip: req.ip });

/**
 * A multipart upload: the binary as `file` (particle-api-js) or `binary` (Particle's upload
 * action), and the text fields. A malformed or oversized body is a 4xx, never a 500.
 */
async function readUpload(req: FastifyRequest, maxBytes: number): Promise<Upload> {
  if (!req.isMultipart()) {
    throw new DomainError('unsupported_media_type', 'Send multipart/form-data: the binary as the file field `file` (or `binary`), and the fields version, title and description');
  }
  const fields: Record<string, unknown> = {};
  let image: Buffer | undefined;
  let fileName: string | undefined;
  try {
    for await (const part of req.parts({ limits: { fileSize: maxBytes, files: 1, fields: 10, fieldSize: 64 * 1024 } })) {
      if (part.type === 'file') {
        const bytes = await part.toBuffer();
        if (part.fieldname !== 'file' && part.fieldname !== 'binary') throw new DomainError('invalid_request', `Send the binary as the file field "file" or "binary", not "${part.fieldname.slice(0, 40)}"`);
        image = bytes;
        fileName = part.filename;
      } else {
        fields[part.fieldname] = part.value;
      }
    }
  } catch (err) {
    if (err instanceof DomainError) throw err;
    if ((err as { code?: string }).code === 'FST_REQ_FILE_TOO_LARGE') throw new DomainError('payload_too_large', `The binary is larger than ${maxBytes} bytes, the most this server takes (FIRMWARE_MAX_BYTES)`);
    if ((err as { statusCode?: number }).statusCode === 413) throw new DomainError('payload_too_large', 'Send one binary and at most 10 fields, each under 64 KiB');
    throw new DomainError('invalid_request', `The multipart body is malformed: ${String((err as Error).message).slice(0, 200)}`);
  }
  if (!image) throw new DomainError('invalid_request', 'No binary: send it as the file field "file" (or "binary")');
  return { image, fileName, fields };
}

/**
 * Product firmware (docs/api.md, "Firmware"; docs/firmware.md), under
 * /v1/products/:productIdOrSlug: images, releases, the impact of a change, the signing key.
 * Team members and the product's tokens, as every product route.
 */
export function firmwareRoutes(scope: FastifyInstance, deps: { firmware: Firmware; updates: Pick<FirmwareUpdates, 'counts'>; guard: Guard }): void {
  const { images, releases } = deps.firmware;
  const teamOnly = deps.guard({ subjects: ['user', 'product'] });
  const tags = ['firmware'];
  type WithV = { Params: { productIdOrSlug: string; version: number } };

  scope.get('/firmware', {
    preHandler: teamOnly,
    config: { productAccess: 'team-read' },
    schema: { tags, summary: "The product's firmware versions, newest first (a bare array, as Particle answers)", params: P, response: { 200: Type.Array(FirmwareRef), ...errorResponses(400, 401, 403) } },
  }, async (req) => images.list(productOf(req)));

  multipartRoutes(scope, (s) => {
    s.post('/firmware', {
      preHandler: teamOnly,
      schema: {
        tags,
        summary: 'Upload a version: multipart, the binary as `file` (or `binary`), `version`, `title`, `description`, and `signature` when the product has a signing key. The module suffix must name this product and version, its CRC-32 must hold',
        params: P,
        consumes: ['multipart/form-data'],
        response: { 201: FirmwareRef, ...errorResponses(400, 401, 403, 409, 413, 415) },
      },
    }, async (req, reply) => reply.code(201).send(await images.upload(productOf(req), await readUpload(req, images.maxBytes), actorOf(req))));
  });

  scope.put<{ Body: Record<string, unknown> }>('/firmware/release', {
    preHandler: teamOnly,
    schema: {
      tags,
      summary: 'Release a version: as the product default (product_default) and to exactly these groups; intelligent: to online devices at once. What is left out stays as it is',
      params: P, body: ReleaseBody, response: { 200: ReleaseAnswer, ...errorResponses(400, 401, 403, 404) },
    },
  }, async (req) => releases.release(productOf(req), req.body, actorOf(req)));

  scope.get('/firmware/updates', {
    preHandler: teamOnly,
    config: { productAccess: 'team-read' },
    schema: {
      tags,
      summary: "The progress of the product's firmware updates: for each version, how many devices were offered it, by where their update stands (pending, downloading, applying, succeeded, failed)",
      params: P, response: { 200: UpdateProgress, ...errorResponses(400, 401, 403) },
    },
  }, async (req) => ({ versions: progressByVersion(await deps.updates.counts(productOf(req).id)) }));

  scope.get('/firmware/signing-key', {
    preHandler: teamOnly,
    config: { productAccess: 'team-read' },
    schema: { tags, summary: "The product's firmware signing key (Ed25519 public key)", params: P, response: { 200: SigningKey, ...errorResponses(400, 401, 403, 404) } },
  }, async (req) => releases.signingKey(productOf(req)));

  scope.put<{ Body: { public_key: string } }>('/firmware/signing-key', {
    preHandler: teamOnly,
    schema: {
      tags, summary: 'Set the product\'s firmware signing key: PEM, or base64 of the 32 raw bytes. From now on every release carries a signature it verifies',
      params: P, body: SigningKeyBody, response: { 200: Type.Object({ ...SigningKey.properties, warnings: Type.Array(Type.String()) }), ...errorResponses(400, 401, 403) },
    },
  }, async (req) => releases.setSigningKey(productOf(req), req.body, actorOf(req)));

  scope.delete('/firmware/signing-key', {
    preHandler: teamOnly,
    schema: { tags, summary: "Remove the product's firmware signing key", params: P, response: { 204: NoContent, ...errorResponses(400, 401, 403, 404) } },
  }, async (req, reply) => {
    await releases.removeSigningKey(productOf(req), actorOf(req));
    return reply.code(204).send();
  });

  scope.get<WithV>('/firmware/:version', {
    preHandler: teamOnly,
    config: { productAccess: 'team-read' },
    schema: { tags, summary: 'One firmware version', params: PV, response: { 200: FirmwareRef, ...errorResponses(400, 401, 403, 404) } },
  }, async (req) => images.get(productOf(req), req.params.version));

  scope.put<WithV & { Body: { title?: string; description?: string | null } }>('/firmware/:version', {
    preHandler: teamOnly,
    schema: { tags, summary: "Change a version's title or description", params: PV, body: EditBody, response: { 200: FirmwareRef, ...errorResponses(400, 401, 403, 404) } },
  }, async (req) => images.edit(productOf(req), req.params.version, req.body));

  scope.delete<WithV>('/firmware/:version', {
    preHandler: teamOnly,
    schema: { tags, summary: 'Delete a version that was never released and to which no device is locked', params: PV, response: { 204: NoContent, ...errorResponses(400, 401, 403, 404, 409) } },
  }, async (req, reply) => {
    await images.remove(productOf(req), req.params.version, actorOf(req));
    return reply.code(204).send();
  });

  scope.get<WithV>('/firmware/:version/binary', {
    preHandler: teamOnly,
    config: { productAccess: 'team-read' },
    schema: {
      tags, summary: 'The binary of a version, as uploaded', params: PV,
      response: { 200: { description: 'The binary', content: { 'application/octet-stream': { schema: { type: 'string', format: 'binary' } } } }, ...errorResponses(400, 401, 403, 404) },
    },
  }, async (req, reply) => {
    const { image, fileName } = await images.download(productOf(req), req.params.version);
    return reply.type('application/octet-stream').header('content-disposition', `attachment; filename="${fileName}"`).send(image);
  });

  scope.get<{ Querystring: Record<string, string> }>('/impact', {
    preHandler: teamOnly,
    config: { productAccess: 'team-read' },
    schema: {
      tags,
      summary: 'How many devices a change would update: action=edit_groups_for_firmware (firmware_version, groups, product_default) or edit_device_groups (devices, groups)',
      params: P, querystring: ImpactQuery, response: { 200: ImpactAnswer, ...errorResponses(400, 401, 403, 404) },
    },
  }, async (req) => releases.impact(productOf(req), req.query));
}
