-- 3-D Secure: a payment attempt whose card must be authenticated stays PENDING while the fan answers the
-- gateway's challenge. return_url is where the gateway sends the fan back (kept so that a repeat of the
-- authorization sends the same parameters under the same idempotency key); next_action is the challenge page's
-- URL, kept so that a replay of the pay request's key sends the fan there again.
ALTER TABLE payment_attempts ADD COLUMN return_url text NOT NULL DEFAULT '';
ALTER TABLE payment_attempts ADD COLUMN next_action text NOT NULL DEFAULT '';

-- GET /api/v1/bookings: a fan's bookings, newest first.
CREATE INDEX bookings_user_created ON bookings (user_id, created_at DESC);
