-- Whether a device takes firmware updates now (it says so in its `hello`, as Device OS's
-- System.disableUpdates() does) and whether the product forces them anyway
-- (docs/firmware.md, "Which version a device runs").
ALTER TABLE devices ADD COLUMN firmware_updates_enabled boolean NOT NULL DEFAULT true;
ALTER TABLE devices ADD COLUMN firmware_updates_forced boolean NOT NULL DEFAULT false;
