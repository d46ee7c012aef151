-- A bypass code's lane (waitroom/bypass.go, admission.Lanes): the lane whose figures the fans it admits count in,
-- and whose lines hold their admissions. '' is the show's general lane, as for every code issued before lanes.
ALTER TABLE bypass_codes ADD COLUMN lane text NOT NULL DEFAULT '';
