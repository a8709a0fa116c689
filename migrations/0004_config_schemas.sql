-- Custom configuration schemas of products (SPEC.md §2.6). A product without a row uses the
-- default schema. The schema is kept as the text that was sent (after parsing and re-serialising):
-- jsonb would reorder the keys, and key order is the display order of modules and settings.
CREATE TABLE product_config_schemas (
  product_id   bigint PRIMARY KEY REFERENCES products (id) ON DELETE CASCADE,
  schema_text  text NOT NULL,
  updated_at   timestamptz NOT NULL,
  updated_by   text NOT NULL
);
