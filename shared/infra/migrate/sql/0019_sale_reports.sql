-- The after-sale reports kept (booking/postgres/report_keep.go): once a show has started its sale is over, and its
-- report is summarised here, on the show's database, from the raw rows; from then on the report is served from
-- this row. The per-fan rows it was built from (queue_joins, queue_grants) are deleted once the summary is older
-- than the retention the operator sets (booking's REPORT_FAN_RETENTION), and fans_forgotten_at says when. The
-- reports themselves are kept (at least 90 days is the promise; nothing here deletes them).
CREATE TABLE sale_reports (
	show_id           text        PRIMARY KEY,
	report            jsonb       NOT NULL,
	summarised_at     timestamptz NOT NULL,
	fans_forgotten_at timestamptz
);
CREATE INDEX sale_reports_forget_idx ON sale_reports (summarised_at) WHERE fans_forgotten_at IS NULL;
