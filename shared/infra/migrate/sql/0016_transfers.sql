-- Ticket transfers: a fan sends a ticket to another fan by a claim link (or e-mail carrying it); the claim
-- reissues the ticket under the new holder with a new code, and the old ticket becomes TRANSFERRED, which check-in
-- refuses. The reissued ticket keeps its booking (the sale it came from) and names the ticket it replaced, so a
-- seat still has exactly one live ticket and the ledger's money stays with the booking that paid.
ALTER TABLE tickets DROP CONSTRAINT IF EXISTS tickets_status_check;
ALTER TABLE tickets ADD CONSTRAINT tickets_status_check
    CHECK (status IN ('VALID', 'CHECKED_IN', 'VOID', 'TRANSFERRED'));
ALTER TABLE tickets DROP CONSTRAINT IF EXISTS tickets_booking_id_seat_id_key;
ALTER TABLE tickets ADD COLUMN transferred_from text REFERENCES tickets (id);
CREATE INDEX tickets_booking ON tickets (booking_id, seat_id);
CREATE INDEX tickets_user ON tickets (user_id) WHERE transferred_from IS NOT NULL;

-- The operator's switch and cut-off: transfers allowed at all, and until how many hours before the show (NULL:
-- until it starts).
ALTER TABLE show_ticket_policies
    ADD COLUMN transfers_enabled     boolean NOT NULL DEFAULT true,
    ADD COLUMN transfer_cutoff_hours double precision CHECK (transfer_cutoff_hours >= 0);

-- Every transfer, kept: the audit of who sent which ticket to whom and when, shown to both fans. Only the claim
-- secret's SHA-256 is stored; the secret travels in the claim link's fragment, never to a server log.
CREATE TABLE ticket_transfers (
    id            text PRIMARY KEY,
    show_id       text NOT NULL REFERENCES shows (id),
    ticket_id     text NOT NULL REFERENCES tickets (id),
    booking_id    text NOT NULL REFERENCES bookings (id),
    seat_id       text NOT NULL,
    from_user     text NOT NULL,
    to_email      text,
    secret_hash   text NOT NULL,
    status        text NOT NULL CHECK (status IN ('PENDING', 'CLAIMED', 'CANCELLED')),
    to_user       text,
    new_ticket_id text REFERENCES tickets (id),
    expires_at    timestamptz NOT NULL,
    created_at    timestamptz NOT NULL DEFAULT now(),
    ended_at      timestamptz
);
-- One open transfer per ticket: sending it again replaces the link.
CREATE UNIQUE INDEX ticket_transfers_one_open ON ticket_transfers (ticket_id) WHERE status = 'PENDING';
CREATE INDEX ticket_transfers_show ON ticket_transfers (show_id);
CREATE INDEX ticket_transfers_from ON ticket_transfers (from_user, created_at DESC);
CREATE INDEX ticket_transfers_to ON ticket_transfers (to_user, created_at DESC) WHERE to_user IS NOT NULL;

-- A seat has at most one live ticket: one that still admits (VALID) or did (CHECKED_IN). A TRANSFERRED ticket is
-- as dead as a VOID one; its reissue is the live one.
DROP INDEX tickets_live_seat;
CREATE UNIQUE INDEX tickets_live_seat ON tickets (show_id, seat_id) WHERE status IN ('VALID', 'CHECKED_IN');
