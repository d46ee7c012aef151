-- Which codes a show's tickets carry at the door: 'static' (one signed code per ticket, on the PDF and the pass)
-- or 'rotating' (a code the holder's phone stamps afresh every 15 s, refused once older than 30 s; see
-- docs/TICKETS.md). Nothing else is stored: a ticket's holder key is derived from the signing key and its id.
ALTER TABLE show_ticket_policies
    ADD COLUMN ticket_codes text NOT NULL DEFAULT 'static' CHECK (ticket_codes IN ('static', 'rotating'));
