-- Operator webhooks: endpoints registered for one show (show_id) or every show (NULL), optionally for some event
-- types only, each with its own signing secret; one delivery per endpoint and event (the unique key drops an event
-- delivered twice by the stream), retried with backoff until DELIVERED or FAILED. body is the exact JSON sent.
CREATE TABLE webhook_endpoints (
    id         text PRIMARY KEY,
    url        text NOT NULL,
    show_id    text,
    types      text[] NOT NULL DEFAULT '{}',
    secret     text NOT NULL,
    created_at timestamptz NOT NULL DEFAULT now(),
    deleted_at timestamptz
);

CREATE TABLE webhook_deliveries (
    id              text PRIMARY KEY,
    endpoint_id     text NOT NULL REFERENCES webhook_endpoints (id),
    event_id        text NOT NULL,
    event_type      text NOT NULL,
    show_id         text NOT NULL DEFAULT '',
    body            text NOT NULL,
    status          text NOT NULL CHECK (status IN ('PENDING', 'DELIVERED', 'FAILED')),
    attempts        integer NOT NULL DEFAULT 0,
    next_attempt_at timestamptz NOT NULL,
    last_status     integer,
    last_error      text NOT NULL DEFAULT '',
    created_at      timestamptz NOT NULL DEFAULT now(),
    delivered_at    timestamptz,
    UNIQUE (endpoint_id, event_id)
);
CREATE INDEX webhook_deliveries_due ON webhook_deliveries (next_attempt_at) WHERE status = 'PENDING';
CREATE INDEX webhook_deliveries_endpoint ON webhook_deliveries (endpoint_id, created_at DESC);
