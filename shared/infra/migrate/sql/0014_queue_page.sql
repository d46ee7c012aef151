-- The queue page's per-show settings (shared/admission Settings.Page): the operator's message and the page's
-- language, as JSON beside the other queue settings, so they are recorded, cached and restored with them.
ALTER TABLE queue_settings ADD COLUMN page jsonb;
