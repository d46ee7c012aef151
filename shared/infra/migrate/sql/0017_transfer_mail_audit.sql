-- The recipient's e-mail of a ticket transfer carries the claim link, whose secret the table otherwise keeps only
-- as a hash. mail_link holds the link from the transfer's creation until the notify worker has sent it, or the
-- transfer ends (claimed, cancelled), whichever comes first; NULL when no e-mail was asked for.
ALTER TABLE ticket_transfers ADD COLUMN IF NOT EXISTS mail_link text;

-- Entries recorded from the event stream (ticket transfers, which fans make) name the event they come from, so an
-- event delivered twice is recorded once.
ALTER TABLE audit_log ADD COLUMN IF NOT EXISTS event_id text;
CREATE UNIQUE INDEX IF NOT EXISTS audit_log_event ON audit_log (event_id) WHERE event_id IS NOT NULL;
