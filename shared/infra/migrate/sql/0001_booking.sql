-- Booking core: catalog, holds and the ledger of sold seats.
-- Later migrations (payments: attempts, payments, tickets, outbox, refunds) reference bookings(id) and
-- sold_seats; they are applied in file-name order, each once, under an advisory lock.

CREATE TABLE venues (
    id         text PRIMARY KEY,
    name       text NOT NULL,
    city       text NOT NULL,
    created_at timestamptz NOT NULL DEFAULT now()
);
CREATE INDEX venues_city ON venues (lower(city));

CREATE TABLE halls (
    id          text PRIMARY KEY,
    venue_id    text NOT NULL REFERENCES venues (id),
    name        text NOT NULL,
    total_seats integer NOT NULL CHECK (total_seats > 0),
    UNIQUE (venue_id, name)
);

-- The static layout of a hall: one row per seat. ord keeps the map's natural order (row by row, left to right).
CREATE TABLE seats (
    hall_id   text NOT NULL REFERENCES halls (id),
    seat_id   text NOT NULL,
    row_label text NOT NULL,
    number    integer NOT NULL,
    category  text NOT NULL,
    ord       integer NOT NULL,
    PRIMARY KEY (hall_id, seat_id)
);

CREATE TABLE events (
    id               text PRIMARY KEY,
    title            text NOT NULL,
    kind             text NOT NULL,
    genre            text NOT NULL DEFAULT '',
    language         text NOT NULL DEFAULT '',
    duration_minutes integer NOT NULL,
    created_at       timestamptz NOT NULL DEFAULT now()
);

CREATE TABLE shows (
    id             text PRIMARY KEY,
    event_id       text NOT NULL REFERENCES events (id),
    hall_id        text NOT NULL REFERENCES halls (id),
    starts_at      timestamptz NOT NULL,
    sale_starts_at timestamptz NOT NULL,
    currency       text NOT NULL,
    prices         jsonb NOT NULL, -- {"GOLD": 45000}, minor units
    -- fence_epoch is the high half of every fencing token of the show. It is bumped (UPDATE ... RETURNING)
    -- whenever Redis is found without the show's epoch key, i.e. after Redis lost its data, so tokens issued
    -- afterwards are larger than any issued before even though Redis's own counter started again from zero.
    fence_epoch    bigint NOT NULL DEFAULT 0,
    created_at     timestamptz NOT NULL DEFAULT now()
);
CREATE INDEX shows_starts_at ON shows (starts_at);
CREATE INDEX shows_event ON shows (event_id);

CREATE TABLE bookings (
    id              text PRIMARY KEY,
    user_id         text NOT NULL,
    show_id         text NOT NULL REFERENCES shows (id),
    status          text NOT NULL CHECK (status IN
                        ('HELD', 'CONFIRMED', 'PAYMENT_PENDING', 'CANCELLED', 'EXPIRED', 'REFUNDED')),
    seat_ids        text[] NOT NULL,
    total_amount    bigint NOT NULL,
    currency        text NOT NULL,
    fence           bigint NOT NULL,
    expires_at      timestamptz NOT NULL,
    admission_jti   text,
    admission_exp   timestamptz,
    payment_id      text,
    created_at      timestamptz NOT NULL DEFAULT now(),
    updated_at      timestamptz NOT NULL DEFAULT now()
);
-- The reconciler's sweep: HELD bookings by expiry.
CREATE INDEX bookings_held_expiry ON bookings (expires_at) WHERE status = 'HELD';
CREATE INDEX bookings_user ON bookings (user_id, show_id);
CREATE INDEX bookings_show_status ON bookings (show_id, status);

-- The newest fencing token recorded for each seat, written when a hold is recorded and when a seat is sold. It
-- only moves forward: a confirmation whose fence is below a seat's recorded fence comes from a hold that has since
-- been superseded (its locks lapsed and someone else claimed the seat), and is refused.
CREATE TABLE seat_fences (
    show_id text NOT NULL,
    seat_id text NOT NULL,
    fence   bigint NOT NULL,
    PRIMARY KEY (show_id, seat_id)
);

-- The ledger: one row per sold seat. The primary key is the last line of defence: whatever Redis forgot, a
-- second sale of a seat violates it and becomes a conflict.
CREATE TABLE sold_seats (
    show_id    text NOT NULL REFERENCES shows (id),
    seat_id    text NOT NULL,
    booking_id text NOT NULL REFERENCES bookings (id),
    fence      bigint NOT NULL,
    sold_at    timestamptz NOT NULL DEFAULT now(),
    PRIMARY KEY (show_id, seat_id)
);
CREATE INDEX sold_seats_booking ON sold_seats (booking_id);

-- Idempotency-Key records, per user and operation (scope). A request first inserts its key as pending; the one
-- that inserted it runs, the others replay its stored response (or wait while it is pending). request_hash tells
-- a replay from a reuse of the key with another body.
CREATE TABLE idempotency_keys (
    user_id      text NOT NULL,
    scope        text NOT NULL,
    key          text NOT NULL,
    request_hash text NOT NULL,
    status_code  integer,            -- NULL while pending
    response     jsonb,
    created_at   timestamptz NOT NULL DEFAULT now(),
    PRIMARY KEY (user_id, scope, key)
);
