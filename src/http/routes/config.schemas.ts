import { Type, type Static, type TObject } from '@sinclair/typebox';
import type { Change } from '../../domain/config/diff.js';
import type { OutOfRange } from '../../domain/config/values.js';
import type { DeviceConfigView, DiffView, ExplainView, HistoryDocumentView, HistoryEntryView, ModuleDelivery, PreviewView, RolloutView } from '../../domain/config/views.js';
import type { ConfigPreviews } from '../../services/config/previews.js';
import type { ConfigWrites, SchemaWrite } from '../../services/config/writes.js';
import { OneOf, PageMeta, orNull } from '../schemas.js';

/**
 * The configuration API's answers (docs/api.md, "Configuration") as JSON Schemas: they feed
 * /v1/openapi.json (and so the console's types) and serialize the answers. The serializer writes
 * only the properties a schema names, so each schema is checked below, when compiling, to name
 * exactly the fields of the view it writes (src/domain/config/views.ts).
 */
const Int = Type.Integer();
const Str = Type.String();

/** Module name → its value; values are whatever JSON the schema in force allows. */
const Values = Type.Record(Str, Type.Unknown(), { description: 'Module name → its value' });
const Source = OneOf(['default', 'fleet', 'device'] as const);
const State = OneOf(['in_sync', 'pending', 'rejected'] as const);

const ModuleDeliverySchema = Type.Object({
  state: State, desired_hash: Str, held_hash: orNull(Str),
  code: orNull(Type.Integer({ description: "The device's refusal code (docs/device-protocol.md)" })),
  since: orNull(Type.String({ description: 'When the module took this state' })),
});
const OutOfRangeSchema = Type.Object({
  path: Str, minimumFirmwareVersion: Type.Optional(Type.Number()), maximumFirmwareVersion: Type.Optional(Type.Number()),
});

/** GET …/config/:deviceId */
export const DeviceConfigAnswer = Type.Object({
  configuration: Type.Object({ current: Values, pending: Values }, { description: 'What the device confirmed, and what it has yet to take' }),
  own: Type.Record(Str, Type.Unknown(), { description: "The device's own values, as written" }),
  sources: Type.Record(Str, Source),
  rejected: Type.Record(Str, Int, { description: 'Module → the code the device refused it with' }),
  delivery: Type.Record(Str, ModuleDeliverySchema),
  outside_firmware_range: Type.Array(OutOfRangeSchema),
});

/** A device write (PUT …/config/:deviceId, and the rollback of a device's version): its configuration now, and the version. */
export const DeviceWriteAnswer = Type.Object({ ...DeviceConfigAnswer.properties, version: Int });

/** A fleet write (PUT …/config, and the rollback of a fleet version). */
export const FleetWriteAnswer = Type.Object({ configuration: Values, version: Int });

/** GET …/config: the fleet's values. */
export const FleetValuesAnswer = Type.Object({ configuration: Values });

/** The schema in force (Accept: application/schema+json), a JSON Schema document, sent as stored. */
export const ConfigSchemaDocument = Type.Record(Str, Type.Unknown(), { description: 'The JSON Schema in force, default or custom' });

/** A values write with ?dry_run=true. */
export const ValuesPreviewAnswer = Type.Object({
  dry_run: Type.Literal(true),
  configuration: Values,
  devices: Type.Object({ changed: Int, online: Int, modules: Type.Record(Str, Int) }, { description: 'The devices whose configuration would change' }),
});

/** A schema written (PUT with application/schema+json), restored (DELETE) or rolled back. */
export const SchemaWriteAnswer = Type.Object({
  ok: Type.Literal(true),
  message: Str,
  version: Type.Optional(orNull(Type.Integer({ description: "The schema's own version (the end of its $id), when it has one" }))),
  history_version: Int,
  kept_aside: Type.Array(Str, { description: 'Modules with stored values the schema no longer has' }),
});

/** A schema with ?dry_run=true. */
export const SchemaPreviewAnswer = Type.Object({ dry_run: Type.Literal(true), version: orNull(Int), kept_aside: Type.Array(Str) });

/** GET …/config/rollout */
export const RolloutAnswer = Type.Object({
  devices: Int, in_sync: Int, pending: Int, pending_online: Int, rejected: Int,
  modules: Type.Record(Str, Type.Object({ in_sync: Int, pending: Int, rejected: Int })),
});

/** GET …/config/:deviceId/explain */
export const ExplainAnswer = Type.Object({
  development: Type.Boolean(), device_values_win: Type.Boolean(), firmware_version: orNull(Int),
  modules: Type.Record(Str, Source),
  settings: Type.Array(Type.Object({ path: Str, value: Type.Optional(Type.Unknown()), source: Source })),
  outside_firmware_range: Type.Array(OutOfRangeSchema),
});

const HistoryEntry = Type.Object({
  version: Int,
  kind: OneOf(['values', 'schema'] as const),
  device_id: orNull(Type.String({ description: 'null: the fleet, or the schema' })),
  action: OneOf(['write', 'reset', 'rollback'] as const),
  rolled_back_from: orNull(Int),
  by: Type.Object({ kind: Str, id: Str, username: Type.Optional(Str) }),
  at: Str,
});

/** GET …/config/history */
export const HistoryPageAnswer = Type.Object({ history: Type.Array(HistoryEntry), meta: PageMeta });

/** GET …/config/history/:version */
export const HistoryDocumentAnswer = Type.Object({ ...HistoryEntry.properties, document: Type.Record(Str, Type.Unknown()) });

const ChangeSchema = Type.Object({ path: Str, op: OneOf(['add', 'remove', 'replace'] as const), from: Type.Optional(Type.Unknown()), to: Type.Optional(Type.Unknown()) });

/** GET …/config/history/:version/diff */
export const DiffAnswer = Type.Object({ from: orNull(Int), to: Int, kind: OneOf(['values', 'schema'] as const), device_id: orNull(Str), changes: Type.Array(ChangeSchema) });

// Checked when compiling: each schema names exactly the fields of its view, and the view fits it.
type Names<S extends TObject, V> = [Exclude<keyof V, keyof Static<S>> | Exclude<keyof Static<S>, keyof V>] extends [never] ? (V extends Static<S> ? true : false) : false;
const agree = <_ extends true>(): void => undefined;
agree<Names<typeof ModuleDeliverySchema, ModuleDelivery>>();
agree<Names<typeof OutOfRangeSchema, OutOfRange>>();
agree<Names<typeof DeviceConfigAnswer, DeviceConfigView>>();
agree<Names<typeof DeviceConfigAnswer['properties']['configuration'], DeviceConfigView['configuration']>>();
agree<Names<typeof DeviceWriteAnswer, DeviceConfigView & { version: number }>>();
agree<Names<typeof ValuesPreviewAnswer, PreviewView>>();
agree<Names<typeof ValuesPreviewAnswer['properties']['devices'], PreviewView['devices']>>();
agree<Names<typeof SchemaWriteAnswer, SchemaWrite & { ok: true; message: string }>>();
agree<Names<typeof SchemaPreviewAnswer, Awaited<ReturnType<ConfigPreviews['schema']>>>>();
agree<Names<typeof FleetWriteAnswer, Awaited<ReturnType<ConfigWrites['replaceFleetValues']>>>>();
agree<Names<typeof RolloutAnswer, RolloutView>>();
agree<Names<typeof RolloutAnswer['properties']['modules']['patternProperties'][string], RolloutView['modules'][string]>>();
agree<Names<typeof ExplainAnswer, ExplainView>>();
agree<Names<typeof HistoryEntry, HistoryEntryView>>();
agree<Names<typeof HistoryEntry['properties']['by'], HistoryEntryView['by']>>();
agree<Names<typeof HistoryDocumentAnswer, HistoryDocumentView>>();
agree<Names<typeof ChangeSchema, Change>>();
agree<Names<typeof DiffAnswer, DiffView>>();
