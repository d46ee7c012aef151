-- An operator rolling an endpoint's signing secret: the old one keeps signing too (a second v1= entry) until
-- previous_secret_expires_at, so the receiver can switch secrets without dropping a delivery.
ALTER TABLE webhook_endpoints ADD COLUMN previous_secret text;
ALTER TABLE webhook_endpoints ADD COLUMN previous_secret_expires_at timestamptz;
