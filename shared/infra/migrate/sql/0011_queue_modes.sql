-- Queue modes (off, always, threshold) and the settings that let a queue run itself (threshold limits, autotune),
-- shared/admission's Mode and Tuning. Rows written before modes existed take the mode their enabled flag meant;
-- a NULL tuning reads as the defaults.
ALTER TABLE queue_settings ADD COLUMN IF NOT EXISTS mode text;
ALTER TABLE queue_settings ADD COLUMN IF NOT EXISTS tuning jsonb;
UPDATE queue_settings SET mode = CASE WHEN enabled THEN 'always' ELSE 'off' END WHERE mode IS NULL;
