-- The hash of the value a device refused: a change-driven delivery does not send the same value
-- again (a device that does not register a module refuses it every time); a reconnect does,
-- since new firmware may take it now.
ALTER TABLE device_config_state ADD COLUMN refused_hash text;
