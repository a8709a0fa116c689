-- What each device holds of its configuration (SPEC.md §3.2, DESIGN.md "Delivery to the device"):
-- per module, the hash and value the device acknowledged, or the refusal it answered.
CREATE TABLE device_config_state (
  device_id   text NOT NULL REFERENCES devices (id) ON DELETE CASCADE,
  module      text NOT NULL,
  hash        text,              -- of the value the device holds (acknowledged, or reported at connect)
  value_text  text,              -- that value, when the cloud sent it
  status      text NOT NULL CHECK (status IN ('in_sync', 'rejected')),
  code        integer,           -- the device's status code of a refusal
  updated_at  timestamptz NOT NULL,
  PRIMARY KEY (device_id, module)
);
