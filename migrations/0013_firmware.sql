-- Product firmware, releases and device groups (docs/firmware.md).

-- The images a product's devices may run, by version (the product version of the module suffix).
-- `image` is the binary as uploaded, `sha256` its digest (hex). `signature` is an Ed25519
-- signature of the whole image, checked against the product's key when it has one.
-- `product_default` marks the release to the whole fleet (one per product); `released_at` is the
-- first release ever, kept when the version is released no more: a version once released is not
-- deleted. `intelligent` is how it was last released (at once to online devices, or at their next
-- connection).
CREATE TABLE product_firmware (
  product_id       bigint NOT NULL REFERENCES products (id) ON DELETE CASCADE,
  version          integer NOT NULL CHECK (version BETWEEN 1 AND 65535),
  title            text NOT NULL,
  description      text NOT NULL DEFAULT '',
  file_name        text NOT NULL,
  size             integer NOT NULL,
  sha256           text NOT NULL,
  image            bytea NOT NULL,
  platform_id      integer NOT NULL,
  signature        bytea,
  uploaded_at      timestamptz NOT NULL,
  uploaded_by_kind text NOT NULL,
  uploaded_by_id   text NOT NULL,
  updated_at       timestamptz NOT NULL,
  product_default  boolean NOT NULL DEFAULT false,
  intelligent      boolean NOT NULL DEFAULT false,
  released_at      timestamptz,
  PRIMARY KEY (product_id, version)
);
CREATE UNIQUE INDEX product_firmware_default ON product_firmware (product_id) WHERE product_default;

-- Groups of a product's devices. `firmware_version` is the version released to the group (a
-- group has one release at a time; a device in several groups runs the highest of theirs).
CREATE TABLE device_groups (
  id               bigserial PRIMARY KEY,
  product_id       bigint NOT NULL REFERENCES products (id) ON DELETE CASCADE,
  name             text NOT NULL,
  color            text,
  description      text NOT NULL DEFAULT '',
  firmware_version integer,
  created_at       timestamptz NOT NULL,
  updated_at       timestamptz NOT NULL,
  FOREIGN KEY (product_id, firmware_version) REFERENCES product_firmware (product_id, version)
);
CREATE UNIQUE INDEX device_groups_product_name ON device_groups (product_id, name);
CREATE INDEX device_groups_release ON device_groups (product_id, firmware_version) WHERE firmware_version IS NOT NULL;

-- Which devices are in which groups: by device for its view and its target, by group for the
-- fleet list's `groups` filter and a group's device count.
CREATE TABLE device_group_members (
  device_id  text NOT NULL REFERENCES devices (id) ON DELETE CASCADE,
  group_id   bigint NOT NULL REFERENCES device_groups (id) ON DELETE CASCADE,
  PRIMARY KEY (device_id, group_id)
);
CREATE INDEX device_group_members_group ON device_group_members (group_id, device_id);

-- Groups belong to a product: a device that leaves its product (removed, moved to another,
-- the product deleted) leaves its groups, whichever write moved it.
CREATE FUNCTION devices_leave_groups() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  DELETE FROM device_group_members WHERE device_id = NEW.id;
  RETURN NEW;
END
$$;
CREATE TRIGGER devices_leave_groups AFTER UPDATE OF product_id ON devices
  FOR EACH ROW WHEN (OLD.product_id IS DISTINCT FROM NEW.product_id) EXECUTE FUNCTION devices_leave_groups();

-- A product's firmware signing key: the raw 32 bytes of an Ed25519 public key. With one, every
-- release carries a signature of the image that it verifies.
CREATE TABLE product_signing_keys (
  product_id  bigint PRIMARY KEY REFERENCES products (id) ON DELETE CASCADE,
  public_key  bytea NOT NULL,
  created_at  timestamptz NOT NULL
);

-- How many devices run each version (a firmware's device_count, the impact of a release), and
-- the fleet list sorted by firmware version.
CREATE INDEX devices_product_firmware ON devices (product_id, firmware_version) WHERE product_id IS NOT NULL;
