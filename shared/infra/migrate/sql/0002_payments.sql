-- Payments: attempts of POST /pay, the payment of each confirmed booking, tickets, refunds, the outbox of
-- lifecycle events and the webhook events seen. Money moves at the gateway; these rows are what we know of it,
-- written so that a process that dies at any point leaves enough behind for the recovery worker to finish.

-- One row per Idempotency-Key of POST /pay (per user). state is where the money stands; outcome is the answer the
-- first request gave (or, while PENDING, the answer a replay gets), NULL while that request is still running.
CREATE TABLE payment_attempts (
    id              text PRIMARY KEY,
    booking_id      text NOT NULL REFERENCES bookings (id),
    user_id         text NOT NULL,
    idempotency_key text NOT NULL,
    request_hash    text NOT NULL,
    payment_method  text NOT NULL,
    amount          bigint NOT NULL CHECK (amount > 0),
    currency        text NOT NULL,
    state           text NOT NULL CHECK (state IN ('STARTED', 'PENDING', 'AUTHORIZED', 'CONFIRMED', 'DECLINED',
                        'REJECTED', 'VOIDING', 'VOIDED', 'REFUNDING', 'REFUNDED')),
    outcome         text CHECK (outcome IN ('CONFIRMED', 'PENDING', 'DECLINED', 'EXPIRED', 'CONFLICT', 'NOT_HELD',
                        'INVALID_METHOD', 'FAILED')),
    detail          text NOT NULL DEFAULT '',
    intent_id       text UNIQUE,
    -- Whoever runs the attempt (the request's saga, then the recovery worker) owns it until lease_until; the worker
    -- only takes attempts whose lease has passed, so a live saga and the worker never act on one at once.
    lease_until     timestamptz NOT NULL,
    tries           integer NOT NULL DEFAULT 0,
    created_at      timestamptz NOT NULL DEFAULT now(),
    updated_at      timestamptz NOT NULL DEFAULT now(),
    UNIQUE (user_id, idempotency_key)
);
CREATE INDEX payment_attempts_booking ON payment_attempts (booking_id);
-- At most one attempt per booking may have money in flight: a second pay with another key waits its turn (409)
-- instead of authorizing the card a second time.
CREATE UNIQUE INDEX payment_attempts_one_live ON payment_attempts (booking_id)
    WHERE state IN ('STARTED', 'PENDING', 'AUTHORIZED');
-- The recovery worker's queue.
CREATE INDEX payment_attempts_work ON payment_attempts (lease_until)
    WHERE state IN ('STARTED', 'PENDING', 'AUTHORIZED', 'VOIDING', 'REFUNDING');

-- The payment of a CONFIRMED booking, written in the confirmation's transaction. AUTHORIZED until the capture
-- succeeds (the worker retries it), then CAPTURED; REFUNDING once a refund is recorded, REFUNDED once the gateway
-- did it.
CREATE TABLE payments (
    id              text PRIMARY KEY,
    booking_id      text NOT NULL UNIQUE REFERENCES bookings (id),
    attempt_id      text NOT NULL UNIQUE REFERENCES payment_attempts (id),
    intent_id       text NOT NULL UNIQUE,
    amount          bigint NOT NULL,
    currency        text NOT NULL,
    status          text NOT NULL CHECK (status IN ('AUTHORIZED', 'CAPTURED', 'REFUNDING', 'REFUNDED')),
    captured_amount bigint NOT NULL DEFAULT 0,
    refunded_amount bigint NOT NULL DEFAULT 0,
    created_at      timestamptz NOT NULL DEFAULT now(),
    captured_at     timestamptz,
    updated_at      timestamptz NOT NULL DEFAULT now()
);
CREATE INDEX payments_unsettled ON payments (updated_at) WHERE status IN ('AUTHORIZED', 'REFUNDING');

-- One ticket per sold seat. A refund voids them; the partial unique index says a seat has at most one live ticket,
-- while letting a refunded seat be sold (and ticketed) again.
CREATE TABLE tickets (
    id            text PRIMARY KEY,
    booking_id    text NOT NULL REFERENCES bookings (id),
    user_id       text NOT NULL,
    show_id       text NOT NULL,
    seat_id       text NOT NULL,
    code          text NOT NULL,
    status        text NOT NULL CHECK (status IN ('VALID', 'CHECKED_IN', 'VOID')),
    checked_in_at timestamptz,
    checked_in_by text,
    created_at    timestamptz NOT NULL DEFAULT now(),
    UNIQUE (booking_id, seat_id)
);
CREATE UNIQUE INDEX tickets_live_seat ON tickets (show_id, seat_id) WHERE status <> 'VOID';

-- A booking's refund (whole bookings only). Recorded in the transaction that gives the seats back; PENDING until
-- the gateway has returned the money.
CREATE TABLE refunds (
    id                text PRIMARY KEY,
    booking_id        text NOT NULL UNIQUE REFERENCES bookings (id),
    payment_id        text NOT NULL REFERENCES payments (id),
    amount            bigint NOT NULL DEFAULT 0,
    status            text NOT NULL CHECK (status IN ('PENDING', 'SUCCEEDED')),
    gateway_refund_id text,
    created_at        timestamptz NOT NULL DEFAULT now(),
    updated_at        timestamptz NOT NULL DEFAULT now()
);
CREATE INDEX refunds_pending ON refunds (created_at) WHERE status = 'PENDING';

-- Lifecycle events (booking.confirmed, booking.refunded, ...) written in the transaction that made them true, for
-- a relay to publish at least once. A sequence never blocks: unrelated shows' confirmations do not serialize here.
CREATE TABLE outbox (
    id           bigserial PRIMARY KEY,
    aggregate_id text NOT NULL,
    type         text NOT NULL,
    payload      jsonb NOT NULL,
    created_at   timestamptz NOT NULL DEFAULT now(),
    published_at timestamptz
);
CREATE INDEX outbox_unpublished ON outbox (id) WHERE published_at IS NULL;

-- Gateway webhook events already handled, by the gateway's event id: a redelivery is acknowledged and ignored.
CREATE TABLE webhook_events (
    id          text PRIMARY KEY,
    type        text NOT NULL,
    intent_id   text,
    received_at timestamptz NOT NULL DEFAULT now()
);
