-- Configuration values (SPEC.md §2.5, §3.2). One row per module: of the fleet (device_id '') or
-- of one device. Kept as text, like schemas, so that key order survives. Rows of modules that a
-- later schema no longer has are kept aside (reads skip them), not destroyed.
CREATE TABLE config_values (
  product_id  bigint NOT NULL REFERENCES products (id) ON DELETE CASCADE,
  device_id   text NOT NULL DEFAULT '',
  module      text NOT NULL,
  value_text  text NOT NULL,
  updated_at  timestamptz NOT NULL,
  PRIMARY KEY (product_id, device_id, module)
);

-- Whether a device's own values of fleet modules win (SPEC.md §3.2): set when it becomes a
-- development device, cleared for regular devices by the next fleet change.
ALTER TABLE devices ADD COLUMN config_own_wins boolean NOT NULL DEFAULT false;
