-- The operators' audit log (shared/audit). Created by the services themselves before it joined the versioned
-- migrations, hence IF NOT EXISTS.
CREATE TABLE IF NOT EXISTS audit_log (
	id      bigserial   PRIMARY KEY,
	at      timestamptz NOT NULL DEFAULT now(),
	actor   text        NOT NULL,
	action  text        NOT NULL,
	show_id text        NOT NULL DEFAULT '',
	old     jsonb,
	new     jsonb
);
CREATE INDEX IF NOT EXISTS audit_log_show_idx ON audit_log (show_id, id DESC);
