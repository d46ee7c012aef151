-- The waiting room's own record (waitroom/postgres): what a queue is rebuilt from after Redis lost it. Created
-- by the edge itself before it joined the versioned migrations, hence IF NOT EXISTS.
CREATE TABLE IF NOT EXISTS waitroom_queues (
	show_id     text        PRIMARY KEY,
	seed        text        NOT NULL DEFAULT '',
	drawn       boolean     NOT NULL DEFAULT false,
	draw_count  bigint      NOT NULL DEFAULT 0,
	draw_digest text        NOT NULL DEFAULT '',
	cursor      bigint      NOT NULL DEFAULT 0,
	seq_ceiling bigint      NOT NULL DEFAULT 0,
	updated_at  timestamptz NOT NULL DEFAULT now()
);
