-- The name a fan gives with their contact, printed on their tickets (booking/ticket/pdf); '' prints the e-mail.
ALTER TABLE contacts ADD COLUMN name text NOT NULL DEFAULT '';
