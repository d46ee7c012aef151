-- Verified-fan sales (waitroom/postgres/registration.go): each fan's registration for a show, and the show's
-- invitation waves. fan_hash is SHA-256 of the show and user ids (waitroom.FanHash), the only form in which a
-- registration is ever published. seq orders registrations: a wave records the highest it drew among (max_seq),
-- so the list it drew from can be read again later (seq <= max_seq, not invited by an earlier wave). wave is the
-- wave that invited the fan, and lane the lane it put them in. A show's waves are numbered from 1; the row with
-- drawn_at NULL is the next wave, its seed committed (commitment published) before it is drawn. Registrations
-- take the show's wave lock shared and a draw takes it exclusive, so no registration commits mid-draw.
CREATE TABLE registrations (
	show_id       text        NOT NULL,
	user_id       text        NOT NULL,
	fan_hash      bytea       NOT NULL,
	seq           bigserial   NOT NULL,
	registered_at timestamptz NOT NULL DEFAULT now(),
	wave          integer,
	lane          text        NOT NULL DEFAULT '',
	PRIMARY KEY (show_id, user_id)
);
CREATE INDEX registrations_uninvited_idx ON registrations (show_id, fan_hash) WHERE wave IS NULL;
CREATE INDEX registrations_seq_idx ON registrations (show_id, seq);
CREATE TABLE invitation_waves (
	show_id         text        NOT NULL,
	wave            integer     NOT NULL CHECK (wave > 0),
	seed            text        NOT NULL,
	commitment      text        NOT NULL,
	committed_at    timestamptz NOT NULL DEFAULT now(),
	drawn_at        timestamptz,
	count           integer     NOT NULL DEFAULT 0,
	lane            text        NOT NULL DEFAULT '',
	eligible        integer     NOT NULL DEFAULT 0,
	eligible_sha256 text        NOT NULL DEFAULT '',
	invited         integer     NOT NULL DEFAULT 0,
	invited_sha256  text        NOT NULL DEFAULT '',
	max_seq         bigint      NOT NULL DEFAULT 0,
	drawn_by        text        NOT NULL DEFAULT '',
	PRIMARY KEY (show_id, wave)
);
-- A contact's e-mail is confirmed by a code mailed to it (booking/contact_confirm.go): only the code's hash is
-- kept, until it expires; confirmed_at is set when the fan gives it back, and cleared when the e-mail changes. A
-- guest registers for a verified-fan sale only with a confirmed contact.
ALTER TABLE contacts ADD COLUMN code_hash bytea, ADD COLUMN code_expires_at timestamptz,
	ADD COLUMN code_tries integer NOT NULL DEFAULT 0, ADD COLUMN confirmed_at timestamptz;
-- A fan's registrations across shows, for "My bookings".
CREATE INDEX registrations_user_idx ON registrations (user_id);
