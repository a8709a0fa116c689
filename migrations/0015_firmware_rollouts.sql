-- Staged rollouts of product firmware (docs/firmware.md, "Staged rollouts").

-- A rollout: a version given to its target (the fleet, or groups) wave by wave. `target_groups`
-- is null for the fleet, else the group names. `waves` is the list as given ({percent}, {count}
-- or {group}), each wave's devices are in firmware_rollout_devices. `state`: running, paused,
-- aborted, completed; `reason` says why it is paused or ended. `current_wave` counts from 0.
-- `errors_since`: the error threshold counts updates finished from then on (the start, and each
-- resume). `binds`: the devices it started are targeted at its version (true while running or
-- paused, and after an abort for the devices it updated, until the product's next release; false
-- once completed, when the version was released to the target instead).
CREATE TABLE firmware_rollouts (
  id                bigserial PRIMARY KEY,
  product_id        bigint NOT NULL REFERENCES products (id) ON DELETE CASCADE,
  version           integer NOT NULL,
  target_groups     text[],
  waves             jsonb NOT NULL,
  rate_per_minute   integer,
  success_percent   numeric NOT NULL,
  advance           text NOT NULL CHECK (advance IN ('auto', 'manual')),
  error_count       integer,
  error_percent     numeric,
  error_min_finished integer NOT NULL DEFAULT 1,
  excluded          jsonb NOT NULL DEFAULT '{}',
  state             text NOT NULL CHECK (state IN ('running', 'paused', 'aborted', 'completed')),
  reason_code       text,
  reason            text,
  current_wave      integer NOT NULL DEFAULT 0,
  errors_since      timestamptz NOT NULL,
  binds             boolean NOT NULL DEFAULT true,
  created_by_kind   text NOT NULL,
  created_by_id     text NOT NULL,
  created_at        timestamptz NOT NULL,
  updated_at        timestamptz NOT NULL,
  finished_at       timestamptz,
  FOREIGN KEY (product_id, version) REFERENCES product_firmware (product_id, version)
);
-- One rollout under way per product; the leader's tick reads the running ones.
CREATE UNIQUE INDEX firmware_rollouts_live ON firmware_rollouts (product_id) WHERE state IN ('running', 'paused');
CREATE INDEX firmware_rollouts_running ON firmware_rollouts (id) WHERE state = 'running';
CREATE INDEX firmware_rollouts_product ON firmware_rollouts (product_id, id DESC);

-- The devices of a rollout, each in one wave, in the order they are started (`position`),
-- chosen when the rollout was made. `started_at` is set when a tick starts the device (one
-- statement for all it starts, so none is started twice). `dropped`: an abort found it not yet
-- updated, and it follows the releases again.
CREATE TABLE firmware_rollout_devices (
  rollout_id  bigint NOT NULL REFERENCES firmware_rollouts (id) ON DELETE CASCADE,
  device_id   text NOT NULL REFERENCES devices (id) ON DELETE CASCADE,
  wave        integer NOT NULL,
  position    integer NOT NULL,
  started_at  timestamptz,
  dropped     boolean NOT NULL DEFAULT false,
  PRIMARY KEY (rollout_id, device_id)
);
-- The next devices to start; the devices started in the last minute (the rate); a device's
-- rollouts (its target).
CREATE INDEX firmware_rollout_devices_next ON firmware_rollout_devices (rollout_id, wave, position) WHERE started_at IS NULL;
CREATE INDEX firmware_rollout_devices_started ON firmware_rollout_devices (rollout_id, started_at) WHERE started_at IS NOT NULL;
CREATE INDEX firmware_rollout_devices_device ON firmware_rollout_devices (device_id) WHERE started_at IS NOT NULL AND NOT dropped;
-- A rollout's updates (its progress).
CREATE INDEX firmware_updates_rollout ON firmware_updates (rollout_id) WHERE rollout_id IS NOT NULL;
