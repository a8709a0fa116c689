-- Firmware updates of devices (docs/device-protocol.md, "Firmware updates"): one row per device
-- and version offered to it, written when its state changes (not per chunk). The newest row of a
-- device is where its update stands; a product's rows counted by version and state are the
-- progress of a release.
CREATE TABLE firmware_updates (
  device_id    text NOT NULL REFERENCES devices (id) ON DELETE CASCADE,
  version      integer NOT NULL,
  product_id   bigint NOT NULL REFERENCES products (id) ON DELETE CASCADE,
  state        text NOT NULL CHECK (state IN ('pending', 'downloading', 'applying', 'succeeded', 'failed')),
  size         bigint NOT NULL,
  bytes_sent   bigint NOT NULL DEFAULT 0,  -- image bytes the cloud sent for this update, over all its transfers
  offset_bytes bigint NOT NULL DEFAULT 0,  -- of the image, what the device acknowledged holding
  error        text,                       -- why it failed (the device's error, old_version, no_return, stalled)
  rollout_id   bigint,                     -- the rollout that started it, if any (a later step)
  started_at   timestamptz,                -- its first transfer
  finished_at  timestamptz,                -- succeeded or failed
  updated_at   timestamptz NOT NULL,
  PRIMARY KEY (device_id, version)
);
-- A device's newest update; a product's progress by version and state; updates waiting for their
-- device to come back, which time out.
CREATE INDEX firmware_updates_newest ON firmware_updates (device_id, updated_at DESC);
CREATE INDEX firmware_updates_product ON firmware_updates (product_id, version, state);
CREATE INDEX firmware_updates_applying ON firmware_updates (updated_at) WHERE state = 'applying';
