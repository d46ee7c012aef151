-- The waiting room's admission record (shared/admission/postgres): every show's queue settings, the admissions
-- made, and the queue's phase with its outbox. These tables were created by the services themselves before they
-- joined the versioned migrations, so every statement tolerates finding them already there.
CREATE TABLE IF NOT EXISTS queue_settings (
	show_id           text             PRIMARY KEY,
	enabled           boolean          NOT NULL,
	admit_per_second  double precision NOT NULL,
	max_active        integer          NOT NULL,
	token_ttl_seconds integer          NOT NULL,
	paused            boolean          NOT NULL DEFAULT false,
	version           bigint           NOT NULL DEFAULT 1,
	updated_at        timestamptz      NOT NULL DEFAULT now()
);
ALTER TABLE queue_settings ADD COLUMN IF NOT EXISTS turn_hold_seconds integer NOT NULL DEFAULT 600;
ALTER TABLE queue_settings ADD COLUMN IF NOT EXISTS bot jsonb;
CREATE TABLE IF NOT EXISTS queue_grants (
	show_id    text        NOT NULL,
	jti        text        NOT NULL,
	user_id    text        NOT NULL,
	issued_at  timestamptz NOT NULL,
	expires_at timestamptz NOT NULL,
	revoked_at timestamptz,
	PRIMARY KEY (show_id, jti)
);
CREATE INDEX IF NOT EXISTS queue_grants_user_idx ON queue_grants (show_id, user_id);
CREATE INDEX IF NOT EXISTS queue_grants_expiry_idx ON queue_grants (show_id, expires_at);
CREATE TABLE IF NOT EXISTS queue_phase (
	show_id     text        PRIMARY KEY,
	phase       text        NOT NULL,
	epoch       bigint      NOT NULL DEFAULT 0,
	observed_at timestamptz NOT NULL
);
CREATE TABLE IF NOT EXISTS queue_outbox (
	id           bigserial   PRIMARY KEY,
	show_id      text        NOT NULL,
	epoch        bigint      NOT NULL,
	type         text        NOT NULL,
	payload      jsonb       NOT NULL,
	created_at   timestamptz NOT NULL DEFAULT now(),
	published_at timestamptz,
	UNIQUE (show_id, epoch)
);
CREATE INDEX IF NOT EXISTS queue_outbox_unpublished ON queue_outbox (id) WHERE published_at IS NULL;
