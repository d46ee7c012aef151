-- Bypass codes (waitroom/postgres): codes an operator issues for a show, each admitting up to `uses` fans at
-- once, skipping the line. Only a hash of each code is kept (code_hash, SHA-256 of the show id and the code: a
-- code carries 100 random bits, so the hash cannot be turned back into it); hint is the code's first group, so an
-- operator can tell codes apart in the list. Every use is a row of bypass_uses, written in the same transaction
-- that counts it and records the fan's admission (queue_grants), so a use is never counted without its admission
-- and a fan presenting the code again is answered with the admission they have.
CREATE TABLE bypass_codes (
	show_id    text        NOT NULL,
	code_hash  bytea       NOT NULL PRIMARY KEY,
	id         text        NOT NULL UNIQUE,
	hint       text        NOT NULL,
	uses       integer     NOT NULL CHECK (uses > 0),
	used       integer     NOT NULL DEFAULT 0 CHECK (used >= 0 AND used <= uses),
	expires_at timestamptz NOT NULL,
	created_at timestamptz NOT NULL DEFAULT now(),
	created_by text        NOT NULL DEFAULT '',
	revoked_at timestamptz
);
CREATE INDEX bypass_codes_show_idx ON bypass_codes (show_id, created_at DESC);
CREATE TABLE bypass_uses (
	code_hash bytea       NOT NULL REFERENCES bypass_codes (code_hash),
	user_id   text        NOT NULL,
	jti       text        NOT NULL,
	used_at   timestamptz NOT NULL DEFAULT now(),
	PRIMARY KEY (code_hash, user_id)
);
