-- Devices, their ownership and product membership, and claim codes.

CREATE TABLE devices (
  id                       text PRIMARY KEY,              -- 24 lower-case hex digits
  secret_hash              text NOT NULL,                 -- SHA-256 of the device secret
  name                     text,
  notes                    text,
  platform_id              integer NOT NULL,
  product_id               bigint REFERENCES products (id) ON DELETE SET NULL,
  owner_kind               text CHECK (owner_kind IN ('user', 'customer')),
  owner_id                 text,
  development              boolean NOT NULL DEFAULT false,
  desired_firmware_version integer,
  serial_number            text,
  online                   boolean NOT NULL DEFAULT false,
  last_heard               timestamptz,
  last_handshake_at        timestamptz,
  last_ip_address          text,
  system_firmware_version  text,
  firmware_version         integer,
  functions                jsonb NOT NULL DEFAULT '[]'::jsonb,
  variables                jsonb NOT NULL DEFAULT '{}'::jsonb,
  created_at               timestamptz NOT NULL,
  updated_at               timestamptz NOT NULL,
  CHECK ((owner_kind IS NULL) = (owner_id IS NULL))
);
-- Fleet pages are read by product in id order, or filtered by name; owners list their devices.
CREATE INDEX devices_product_id ON devices (product_id, id) WHERE product_id IS NOT NULL;
CREATE INDEX devices_product_name ON devices (product_id, lower(name)) WHERE product_id IS NOT NULL;
CREATE INDEX devices_owner ON devices (owner_kind, owner_id, id) WHERE owner_id IS NOT NULL;

-- Fleet sizes, kept with the device rows so that a page's total needs no count over the fleet.
ALTER TABLE products ADD COLUMN device_count integer NOT NULL DEFAULT 0;

-- Claim codes: single use, bound to whoever asked (a user, or a customer of a product).
CREATE TABLE claim_codes (
  code_hash       text PRIMARY KEY,
  owner_kind      text NOT NULL CHECK (owner_kind IN ('user', 'customer')),
  owner_id        text NOT NULL,
  product_id      bigint REFERENCES products (id) ON DELETE CASCADE,
  created_at      timestamptz NOT NULL,
  expires_at      timestamptz NOT NULL
);
CREATE INDEX claim_codes_owner ON claim_codes (owner_kind, owner_id);
CREATE INDEX claim_codes_expiry ON claim_codes (expires_at);
