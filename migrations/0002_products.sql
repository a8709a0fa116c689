-- Products, their team members, and their customers.

CREATE TABLE products (
  id              bigserial PRIMARY KEY,
  slug            text NOT NULL,
  name            text NOT NULL,
  description     text NOT NULL DEFAULT '',
  platform_id     integer NOT NULL,
  created_by      text NOT NULL,
  created_at      timestamptz NOT NULL,
  updated_at      timestamptz NOT NULL
);
CREATE UNIQUE INDEX products_slug_key ON products (slug);

CREATE TABLE product_members (
  product_id      bigint NOT NULL REFERENCES products (id) ON DELETE CASCADE,
  user_id         text NOT NULL REFERENCES users (id) ON DELETE CASCADE,
  role            text NOT NULL DEFAULT 'administrator',
  added_at        timestamptz NOT NULL,
  PRIMARY KEY (product_id, user_id)
);
CREATE INDEX product_members_user ON product_members (user_id);

-- Customers of a product. A shadow customer (two-legged design) has no password.
CREATE TABLE customers (
  id              text PRIMARY KEY,
  product_id      bigint NOT NULL REFERENCES products (id) ON DELETE CASCADE,
  email           text NOT NULL,
  password_hash   text,
  created_at      timestamptz NOT NULL,
  updated_at      timestamptz NOT NULL
);
CREATE UNIQUE INDEX customers_product_email_key ON customers (product_id, lower(email));
