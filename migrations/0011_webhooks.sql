-- Webhooks (docs/webhooks.md): a user's (owner_kind/owner_id: the events of the devices they own
-- and what they publish) or a product's (product_id: the fleet's events). `spec` holds Particle's
-- fields, the auth password and header values included: they are needed to send. The signing
-- secret is kept as it is for the same reason (an HMAC needs the key); `previous_secret` still
-- signs until `previous_secret_until`, so that receivers keep verifying through a rotation.
CREATE TABLE webhooks (
  id                     text PRIMARY KEY,
  owner_kind             text,
  owner_id               text,
  product_id             bigint REFERENCES products (id) ON DELETE CASCADE,
  spec                   jsonb NOT NULL,
  secret                 text NOT NULL,
  previous_secret        text,
  previous_secret_until  timestamptz,
  disabled_reason        text,
  failing_since          timestamptz,
  created_at             timestamptz NOT NULL,
  updated_at             timestamptz NOT NULL,
  CHECK ((owner_kind IS NULL) <> (product_id IS NULL))
);
CREATE INDEX webhooks_owner ON webhooks (owner_kind, owner_id);
CREATE INDEX webhooks_product ON webhooks (product_id);

-- One event for one webhook. Written before the event is acknowledged (the device's PUBACK, the
-- API's 200), so that a node's crash loses none. `id` is the Standard Webhooks `webhook-id`: the
-- same on every attempt, so that a receiver drops repeats. A node that takes a delivery to send
-- it holds it until `lease_until`; past that, any node may take it again.
CREATE TABLE webhook_deliveries (
  id           text PRIMARY KEY,
  webhook_id   text NOT NULL REFERENCES webhooks (id) ON DELETE CASCADE,
  event        jsonb NOT NULL,
  status       text NOT NULL,           -- pending, sending, delivered, failed
  attempts     integer NOT NULL DEFAULT 0,
  skipped      integer NOT NULL DEFAULT 0,
  next_at      timestamptz NOT NULL,
  lease_node   text,
  lease_until  timestamptz,
  created_at   timestamptz NOT NULL,
  finished_at  timestamptz,
  resend_of    text
);
CREATE INDEX webhook_deliveries_due ON webhook_deliveries (next_at) WHERE status IN ('pending', 'sending');
CREATE INDEX webhook_deliveries_webhook ON webhook_deliveries (webhook_id, created_at);

-- Each try of a delivery, for the log: when, the answer's status, how long it took, the start of
-- the answer, or why no answer came.
CREATE TABLE webhook_attempts (
  delivery_id  text NOT NULL REFERENCES webhook_deliveries (id) ON DELETE CASCADE,
  n            integer NOT NULL,
  webhook_id   text NOT NULL,
  at           timestamptz NOT NULL,
  outcome      text NOT NULL,           -- delivered, failed, skipped
  status       integer,
  latency_ms   integer NOT NULL,
  answer       text,
  error        text,
  PRIMARY KEY (delivery_id, n)
);
CREATE INDEX webhook_attempts_webhook ON webhook_attempts (webhook_id, at);
