-- The operator console can close a show's sale: new holds are refused from sale_closed_at on.
ALTER TABLE shows ADD COLUMN sale_closed_at timestamptz;
