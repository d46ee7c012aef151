-- The after-sale report's record (booking's GET /admin/v1/shows/{id}/report): what the waiting room did not yet
-- keep in PostgreSQL. The admissions are queue_grants already; the bookings, payments and refunds booking's ledger.
--
-- queue_joins: each fan's first place in a show's queue, one row per fan and show, written by the edge in batches
-- (waitroom/postgres Journal: one INSERT per replica and flush, at most every half second, ON CONFLICT DO NOTHING
-- so the first join stays). Arrivals, the queue's length, the wait in line and who joined and never bought are
-- read from it beside queue_grants. shadow marks a suspected bot given a shadow place (a place that never comes up):
-- counted among the bots, not the arrivals.
CREATE TABLE queue_joins (
	show_id   text        NOT NULL,
	user_id   text        NOT NULL,
	joined_at timestamptz NOT NULL,
	shadow    boolean     NOT NULL DEFAULT false,
	PRIMARY KEY (show_id, user_id)
);
CREATE INDEX queue_joins_minute_idx ON queue_joins (show_id, joined_at);
-- queue_refusals: joins refused a new place, counted per show, minute and reason (waitroom's refusal table's names),
-- so a crowd of scripts adds counts, not rows. suspect is the reason's row in that table: a suspected bot's.
CREATE TABLE queue_refusals (
	show_id text        NOT NULL,
	minute  timestamptz NOT NULL,
	reason  text        NOT NULL,
	suspect boolean     NOT NULL DEFAULT false,
	n       bigint      NOT NULL CHECK (n >= 0),
	PRIMARY KEY (show_id, minute, reason)
);
-- payment_breaker_openings: each time a booking replica's payment circuit breaker opened (it is per replica and not
-- per show; the report counts the openings within the sale's time).
CREATE TABLE payment_breaker_openings (
	id        bigserial   PRIMARY KEY,
	opened_at timestamptz NOT NULL DEFAULT now()
);
CREATE INDEX payment_breaker_openings_at_idx ON payment_breaker_openings (opened_at);
