-- Fan notifications: a fan's contact (the e-mail they gave, and the language of the page they gave it from), the
-- page language of the request that created each booking, and one row per notification sent (by the event's dedupe
-- id), so an event the stream delivers twice is not mailed twice.
CREATE TABLE contacts (
    user_id    text PRIMARY KEY,
    email      text NOT NULL,
    language   text NOT NULL DEFAULT '',
    updated_at timestamptz NOT NULL DEFAULT now()
);

ALTER TABLE bookings ADD COLUMN language text NOT NULL DEFAULT '';

CREATE TABLE notifications (
    event_id   text PRIMARY KEY,
    user_id    text NOT NULL,
    kind       text NOT NULL,
    status     text NOT NULL CHECK (status IN ('SENDING', 'SENT', 'FAILED')),
    error      text NOT NULL DEFAULT '',
    created_at timestamptz NOT NULL DEFAULT now(),
    sent_at    timestamptz
);
