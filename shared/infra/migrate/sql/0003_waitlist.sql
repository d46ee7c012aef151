-- Waitlists of sold-out shows: one entry per fan and show; id orders the entries first come first served, and a
-- fan joining again keeps the row, so the place.
CREATE TABLE waitlist (
    id         bigserial PRIMARY KEY,
    show_id    text NOT NULL REFERENCES shows (id),
    user_id    text NOT NULL,
    seats      integer NOT NULL CHECK (seats > 0),
    created_at timestamptz NOT NULL DEFAULT now(),
    updated_at timestamptz NOT NULL DEFAULT now(),
    UNIQUE (show_id, user_id)
);
CREATE INDEX waitlist_show_order ON waitlist (show_id, id);
