-- Partial refunds under a per-show refund policy.
--
-- A booking may now have several refunds, each of some of its seats: seat_ids names them, seats_amount is what
-- those seats cost, percent and fee are the policy's tier and per-seat fee at the time of the request, and
-- amount_due is what the fan was promised (and shown before confirming). amount stays what the gateway actually
-- returned, written when it did; the invariant checker holds the two equal once the refund has settled.
ALTER TABLE refunds DROP CONSTRAINT IF EXISTS refunds_booking_id_key;
ALTER TABLE refunds
    ADD COLUMN show_id      text,
    ADD COLUMN seat_ids     text[] NOT NULL DEFAULT '{}',
    ADD COLUMN seats_amount bigint NOT NULL DEFAULT 0,
    ADD COLUMN percent      integer NOT NULL DEFAULT 100 CHECK (percent BETWEEN 0 AND 100),
    ADD COLUMN fee          bigint NOT NULL DEFAULT 0,
    ADD COLUMN amount_due   bigint NOT NULL DEFAULT 0;
-- Refunds recorded before this migration were of whole bookings at 100%.
UPDATE refunds r SET show_id = b.show_id, seat_ids = b.seat_ids, seats_amount = b.total_amount,
    amount_due = b.total_amount
    FROM bookings b WHERE b.id = r.booking_id;
ALTER TABLE refunds ALTER COLUMN show_id SET NOT NULL;
CREATE INDEX refunds_booking ON refunds (booking_id);
CREATE INDEX refunds_show ON refunds (show_id);

-- A show's ticket policy, set by its operator: the refund tiers (NULL: the deployment's REFUND_WINDOW default, a
-- full refund until that long before the show) and a fee kept per refunded seat. Keyed by show, like every
-- per-show row, so that a show's rows travel together.
CREATE TABLE show_ticket_policies (
    show_id          text PRIMARY KEY REFERENCES shows (id),
    refund_tiers     jsonb,
    refund_fee_minor bigint NOT NULL DEFAULT 0 CHECK (refund_fee_minor >= 0),
    updated_at       timestamptz NOT NULL DEFAULT now()
);
