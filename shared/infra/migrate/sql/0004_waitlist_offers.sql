-- Waitlist offers: an entry is WAITING in line, OFFERED while a hold made for it (booking_id) runs, then ACCEPTED
-- (paid), LAPSED (the offer's hold ended unpaid) or LEFT (the fan left). passed_over counts the offers made to
-- entries behind this one while it did not fit; at the pass limit it blocks the line until it fits (docs/EVENTS.md,
-- booking/README.md). category is the seat category asked for ('' any); language the fan's page language.
ALTER TABLE waitlist
    ADD COLUMN status           text NOT NULL DEFAULT 'WAITING'
        CHECK (status IN ('WAITING', 'OFFERED', 'ACCEPTED', 'LAPSED', 'LEFT')),
    ADD COLUMN category         text NOT NULL DEFAULT '',
    ADD COLUMN language         text NOT NULL DEFAULT '',
    ADD COLUMN booking_id       text REFERENCES bookings (id),
    ADD COLUMN offer_seats      text[],
    ADD COLUMN offer_expires_at timestamptz,
    ADD COLUMN passed_over      integer NOT NULL DEFAULT 0;
CREATE INDEX waitlist_in_line ON waitlist (show_id, id) WHERE status IN ('WAITING', 'OFFERED');
CREATE UNIQUE INDEX waitlist_offer_booking ON waitlist (booking_id) WHERE booking_id IS NOT NULL;
