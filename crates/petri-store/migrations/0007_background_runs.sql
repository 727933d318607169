-- Background processes are runs started detached; they are listed apart from ordinary runs.
ALTER TABLE runs ADD COLUMN background INTEGER NOT NULL DEFAULT 0;
CREATE INDEX runs_background ON runs (sandbox_id, started_at) WHERE background = 1;
