-- A session's first access token names the session: its session_id is its own token_hash (the
-- session of a client_credentials token, of a login), so such tokens are found by the primary
-- key and need no entry in the session index. Only tokens that joined a session begun by
-- another (a refresh, a temporary token) are indexed by session. A token is one random-keyed
-- index entry lighter to store (docs/benchmarks.md, "Measurements behind design choices").
-- Rows from before keep their random session ids, which never equal a token hash: they stay in
-- the index, and lookups by session find them as before.
DROP INDEX access_tokens_session;
CREATE INDEX access_tokens_session ON access_tokens (session_id) WHERE session_id <> token_hash;
