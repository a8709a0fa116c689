import { Type } from '@sinclair/typebox';
import { Str } from '../schemas.js';

/** JSON Schemas of a rollout's fields (docs/firmware.md, "Staged rollouts"), for POST …/rollouts and `rollout` of PUT …/firmware/release. */

const Num = Type.Union([Type.Number(), Str(12)]);
const Wave = Type.Union([
  Type.Object({ percent: Num }, { additionalProperties: false }),
  Type.Object({ count: Type.Union([Type.Integer(), Str(12)]) }, { additionalProperties: false }),
  Type.Object({ group: Str(64) }, { additionalProperties: false }),
  Str(80, { description: 'Short forms: "10%", "25", "group:beta"' }),
]);

/** The fields of a rollout (POST …/rollouts; `rollout` of PUT …/firmware/release takes them too, without version and groups). */
export const RolloutFields = {
  waves: Type.Optional(Type.Array(Wave, { minItems: 1, maxItems: 20, description: 'In order: each a share of the targeted devices in %, a count, or a group; what they leave is a last wave. Default: one wave of 100 %' })),
  rate_per_minute: Type.Optional(Type.Union([Type.Integer(), Str(12), Type.Null()], { description: 'Devices started per minute, at most; none: a wave all at once' })),
  success_threshold: Type.Optional(Type.Union([Num, Type.Null()], { description: 'The share of a wave (in %) that must have succeeded before the next starts (default 100)' })),
  advance: Type.Optional(Type.Union([Type.Literal('auto'), Type.Literal('manual')], { description: 'auto (default): the next wave starts once the threshold is met; manual: a person starts it (POST …/next)' })),
  error_threshold: Type.Optional(Type.Union([Type.Object({
    count: Type.Optional(Type.Union([Type.Integer(), Str(12), Type.Null()])),
    percent: Type.Optional(Type.Union([Num, Type.Null()])),
    min_finished: Type.Optional(Type.Union([Type.Integer(), Str(12), Type.Null()])),
  }, { additionalProperties: false, description: 'Pauses the rollout once `count` updates failed, or `percent` of the finished ones, after at least `min_finished` finished (default 1)' }), Type.Null()])),
};

