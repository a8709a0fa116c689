-- Token sessions: every token belongs to the session that a grant started (a login, a client's
-- credentials); a refresh continues it, and a temporary token taken from it
-- (POST /v1/access_tokens) joins it. Revoking a session's own token revokes the whole session,
-- temporary tokens included; a temporary token lives no longer than `temporary_until` (what it
-- was asked for) nor than the session's newest token, and a refresh carries it along.
-- Tokens issued before sessions existed are each a session of their own.
ALTER TABLE access_tokens ADD COLUMN session_id text;
ALTER TABLE access_tokens ADD COLUMN temporary_until timestamptz;
UPDATE access_tokens SET session_id = token_hash;
ALTER TABLE access_tokens ALTER COLUMN session_id SET NOT NULL;
CREATE INDEX access_tokens_session ON access_tokens (session_id);

ALTER TABLE refresh_tokens ADD COLUMN session_id text;
UPDATE refresh_tokens SET session_id = access_token_hash;
ALTER TABLE refresh_tokens ALTER COLUMN session_id SET NOT NULL;
CREATE INDEX refresh_tokens_session ON refresh_tokens (session_id);
