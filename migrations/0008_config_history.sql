-- History of a product's configuration (issue: history, diff, rollback): every schema change and
-- every write of fleet or device values, with who made it and when. Versions count up per
-- product, across all of its scopes, so that "version 12" names one change without more context.
CREATE TABLE config_history (
  product_id        bigint NOT NULL REFERENCES products (id) ON DELETE CASCADE,
  version           integer NOT NULL,
  kind              text NOT NULL CHECK (kind IN ('values', 'schema')),
  device_id         text,           -- values of one device; NULL for the fleet's values and for the schema
  document          text,           -- the values (JSON) or the schema as stored; NULL: the default schema
  action            text NOT NULL CHECK (action IN ('write', 'reset', 'rollback')),
  rolled_back_from  integer,        -- the version a rollback restored
  actor_kind        text NOT NULL,
  actor_id          text NOT NULL,
  created_at        timestamptz NOT NULL,
  PRIMARY KEY (product_id, version)
);
CREATE INDEX config_history_scope ON config_history (product_id, kind, device_id, version);
