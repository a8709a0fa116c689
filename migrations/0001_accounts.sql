-- Accounts, OAuth clients, access and refresh tokens, MFA, and the security audit log.
-- Secrets (tokens, client secrets, MFA tokens, recovery codes) are stored only as SHA-256
-- digests; passwords as argon2id hashes.

CREATE TABLE users (
  id              text PRIMARY KEY,
  username        text NOT NULL,
  password_hash   text NOT NULL,
  account_info    jsonb NOT NULL DEFAULT '{}'::jsonb,
  mfa_secret      text,
  mfa_last_step   bigint,
  created_at      timestamptz NOT NULL,
  updated_at      timestamptz NOT NULL
);
-- Usernames are e-mail addresses and compare case-insensitively.
CREATE UNIQUE INDEX users_username_key ON users (lower(username));

CREATE TABLE oauth_clients (
  id              text PRIMARY KEY,
  secret_hash     text NOT NULL,
  name            text NOT NULL,
  type            text NOT NULL CHECK (type IN ('installed', 'web')),
  redirect_uri    text,
  scope           text,
  owner_kind      text NOT NULL CHECK (owner_kind IN ('user', 'product')),
  owner_id        text NOT NULL,
  created_at      timestamptz NOT NULL,
  updated_at      timestamptz NOT NULL
);
CREATE INDEX oauth_clients_owner ON oauth_clients (owner_kind, owner_id);

-- The subject of a token is a user, a product (client_credentials of a product client) or a
-- product customer; exactly the matching id column is set.
CREATE TABLE access_tokens (
  token_hash      text PRIMARY KEY,
  subject_kind    text NOT NULL CHECK (subject_kind IN ('user', 'product', 'customer')),
  user_id         text,
  product_id      text,
  customer_id     text,
  client_id       text NOT NULL,
  scope           text,
  created_at      timestamptz NOT NULL,
  expires_at      timestamptz
);
CREATE INDEX access_tokens_user ON access_tokens (user_id) WHERE user_id IS NOT NULL;
CREATE INDEX access_tokens_product ON access_tokens (product_id) WHERE product_id IS NOT NULL;
CREATE INDEX access_tokens_customer ON access_tokens (customer_id) WHERE customer_id IS NOT NULL;
CREATE INDEX access_tokens_client ON access_tokens (client_id);
CREATE INDEX access_tokens_expiry ON access_tokens (expires_at) WHERE expires_at IS NOT NULL;

CREATE TABLE refresh_tokens (
  token_hash        text PRIMARY KEY,
  access_token_hash text NOT NULL,
  subject_kind      text NOT NULL CHECK (subject_kind IN ('user', 'product', 'customer')),
  user_id           text,
  product_id        text,
  customer_id       text,
  client_id         text NOT NULL,
  scope             text,
  access_expires_in integer NOT NULL,
  created_at        timestamptz NOT NULL,
  expires_at        timestamptz NOT NULL
);
CREATE INDEX refresh_tokens_client ON refresh_tokens (client_id);
CREATE INDEX refresh_tokens_access ON refresh_tokens (access_token_hash);
CREATE INDEX refresh_tokens_customer ON refresh_tokens (customer_id) WHERE customer_id IS NOT NULL;

-- Pending second steps: a login waiting for its one-time password ('login'), and an MFA
-- enrolment waiting for its first code ('enroll'). The login request's lifetime and scope are
-- kept here so that the OTP step issues the token that was asked for.
CREATE TABLE mfa_challenges (
  token_hash      text PRIMARY KEY,
  purpose         text NOT NULL CHECK (purpose IN ('login', 'enroll')),
  user_id         text NOT NULL REFERENCES users (id) ON DELETE CASCADE,
  client_id       text,
  request         jsonb NOT NULL DEFAULT '{}'::jsonb,
  pending_secret  text,
  attempts        integer NOT NULL DEFAULT 0,
  created_at      timestamptz NOT NULL,
  expires_at      timestamptz NOT NULL
);
CREATE INDEX mfa_challenges_user ON mfa_challenges (user_id);

CREATE TABLE recovery_codes (
  code_hash       text PRIMARY KEY,
  user_id         text NOT NULL REFERENCES users (id) ON DELETE CASCADE,
  used_at         timestamptz
);
CREATE INDEX recovery_codes_user ON recovery_codes (user_id);

-- Security events, readable by the account owner. Kept when the account is deleted.
CREATE TABLE audit_events (
  id              bigserial PRIMARY KEY,
  account_kind    text NOT NULL,
  account_id      text NOT NULL,
  type            text NOT NULL,
  ip              text,
  details         jsonb NOT NULL DEFAULT '{}'::jsonb,
  at              timestamptz NOT NULL
);
CREATE INDEX audit_events_account ON audit_events (account_kind, account_id, id DESC);
