-- What door devices admitted while offline, sent when they are back (POST /api/v1/shows/{id}/gate-scans). A
-- ticket is checked in at the earliest scan the platform hears of (tickets.checked_in_at/_by); every device's
-- scan of it is one row, so a device sending its scan again changes nothing, and two devices' scans of one
-- ticket are a conflict the console shows. An online check-in joins the rows once a device's scan of the same
-- ticket arrives.
CREATE TABLE gate_scans (
    ticket_id   text NOT NULL REFERENCES tickets (id),
    device_id   text NOT NULL,
    show_id     text NOT NULL,
    scanned_at  timestamptz NOT NULL,
    received_at timestamptz NOT NULL DEFAULT now(),
    PRIMARY KEY (ticket_id, device_id)
);
CREATE INDEX gate_scans_show ON gate_scans (show_id);
