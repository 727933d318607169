-- Sandboxes are never hard-deleted: deleted_at is written once (by DELETE or the TTL sweeper).
CREATE TABLE sandboxes (
    id             TEXT PRIMARY KEY,
    language       TEXT NOT NULL,
    status         TEXT NOT NULL CHECK (status IN ('created', 'active', 'expired', 'deleted')),
    agent          TEXT,
    created_by     TEXT NOT NULL DEFAULT 'unknown',
    created_at     TEXT NOT NULL,
    last_active_at TEXT NOT NULL,
    expires_at     TEXT NOT NULL,
    deleted_at     TEXT,
    memory_mb      INTEGER,
    pids_max       INTEGER,
    cpu_millis     INTEGER
);
CREATE INDEX idx_sandboxes_created_at ON sandboxes(created_at);
CREATE INDEX idx_sandboxes_live_expiry ON sandboxes(expires_at) WHERE deleted_at IS NULL;

-- A run row is written when the command starts (status 'running') and completed when it ends,
-- so a client disconnect or a server crash can never lose it.
CREATE TABLE runs (
    id               TEXT PRIMARY KEY,
    sandbox_id       TEXT NOT NULL REFERENCES sandboxes(id),
    command          TEXT NOT NULL,
    status           TEXT NOT NULL CHECK (status IN
                       ('running', 'succeeded', 'failed', 'timed_out', 'killed', 'interrupted')),
    started_at       TEXT NOT NULL,
    completed_at     TEXT,
    duration_ms      INTEGER,
    exit_code        INTEGER,
    error            TEXT,
    timeout_seconds  INTEGER NOT NULL,
    output_bytes     INTEGER NOT NULL DEFAULT 0,
    output_truncated INTEGER NOT NULL DEFAULT 0,
    output_evicted   INTEGER NOT NULL DEFAULT 0
);
CREATE INDEX idx_runs_sandbox_started ON runs(sandbox_id, started_at);
CREATE INDEX idx_runs_retained ON runs(started_at) WHERE output_evicted = 0;
