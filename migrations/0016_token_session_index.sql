-- A session's first access token names the session: its session_id is its own token_hash (the
-- session of a client_credentials token, of a login), so such tokens are found by the primary
-- key and need no entry in the session index. Only tokens that joined a session begun by
-- another (a refresh, a temporary token) are indexed by session. A token is one random-keyed
-- index entry lighter to store (docs/benchmarks.md, "Measurements behind design choices").
-- Rows from before keep their session ids: random ones stay in the index, and those that
-- 0009_token_sessions.sql set to the token's own hash are found by the primary key, as new ones.
DROP INDEX access_tokens_session;
CREATE INDEX access_tokens_session ON access_tokens (session_id) WHERE session_id <> token_hash;
