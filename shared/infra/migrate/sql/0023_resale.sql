-- The face-value exchange: a fan who cannot go lists a ticket at no more than the organiser's cap; the listing is
-- offered to the show's waitlist first, then to anyone; the buyer's paid booking takes the seat in the same
-- transaction that marks the seller's ticket RESOLD and records the seller's payout (price less the fee) as a
-- refund of the seller's payment, which the recovery worker settles exactly once at the gateway.

-- The operator's word on resale, beside the show's other ticket rules (off unless switched on).
ALTER TABLE show_ticket_policies
    ADD COLUMN resale_enabled         boolean NOT NULL DEFAULT false,
    ADD COLUMN resale_max_price_ratio double precision NOT NULL DEFAULT 1
        CHECK (resale_max_price_ratio > 0 AND resale_max_price_ratio <= 1),
    ADD COLUMN resale_fee_percent     double precision NOT NULL DEFAULT 0
        CHECK (resale_fee_percent >= 0 AND resale_fee_percent < 100);

-- A listed ticket is LISTED (still its holder's, but neither transferable, refundable nor admitting) until it is
-- withdrawn (VALID again) or sold (RESOLD, refused at the door: the buyer's ticket is the live one).
ALTER TABLE tickets DROP CONSTRAINT IF EXISTS tickets_status_check;
ALTER TABLE tickets ADD CONSTRAINT tickets_status_check
    CHECK (status IN ('VALID', 'CHECKED_IN', 'VOID', 'TRANSFERRED', 'LISTED', 'RESOLD'));
DROP INDEX IF EXISTS tickets_live_seat;
CREATE UNIQUE INDEX tickets_live_seat ON tickets (show_id, seat_id) WHERE status IN ('VALID', 'CHECKED_IN', 'LISTED');

CREATE TABLE resale_listings (
    id                text PRIMARY KEY,
    show_id           text NOT NULL REFERENCES shows (id),
    ticket_id         text NOT NULL REFERENCES tickets (id),
    booking_id        text NOT NULL REFERENCES bookings (id), -- the seller's: the payment the payout returns from
    seller_id         text NOT NULL,
    seat_id           text NOT NULL,
    category          text NOT NULL,
    face_value        bigint NOT NULL CHECK (face_value > 0),
    price             bigint NOT NULL CHECK (price > 0 AND price <= face_value),
    fee               bigint NOT NULL CHECK (fee >= 0 AND fee < price),
    currency          text NOT NULL,
    status            text NOT NULL CHECK (status IN ('LISTED', 'SOLD', 'WITHDRAWN')),
    offer_booking_id  text REFERENCES bookings (id), -- the waitlist offer's hold, when it was offered to the line
    buyer_booking_id  text REFERENCES bookings (id), -- once SOLD
    created_at        timestamptz NOT NULL DEFAULT now(),
    ended_at          timestamptz
);
-- One open listing per ticket.
CREATE UNIQUE INDEX resale_listings_one_open ON resale_listings (ticket_id) WHERE status = 'LISTED';
CREATE INDEX resale_listings_show ON resale_listings (show_id) WHERE status = 'LISTED';

-- Which holds are holds of a listing: the confirmation finds its listing here.
CREATE TABLE resale_holds (
    booking_id text PRIMARY KEY REFERENCES bookings (id),
    listing_id text NOT NULL REFERENCES resale_listings (id)
);
CREATE INDEX resale_holds_listing ON resale_holds (listing_id);

-- A seller's payout is a refund of the seller's payment that names its listing: at most one per listing.
ALTER TABLE refunds ADD COLUMN listing_id text REFERENCES resale_listings (id);
CREATE UNIQUE INDEX refunds_one_payout ON refunds (listing_id) WHERE listing_id IS NOT NULL;
