-- The last successful dependency install of each sandbox: an exec whose plan has the same
-- fingerprint skips installing. Kept server-side so sandboxed code cannot forge it.
CREATE TABLE installs (
    sandbox_id   TEXT PRIMARY KEY REFERENCES sandboxes(id),
    fingerprint  TEXT NOT NULL,
    source       TEXT NOT NULL,
    installed_at TEXT NOT NULL,
    run_id       TEXT NOT NULL
);

-- Every connection a sandbox attempted through the egress proxy, allowed or not.
CREATE TABLE egress (
    id          INTEGER PRIMARY KEY,
    sandbox_id  TEXT NOT NULL,
    run_id      TEXT NOT NULL,
    at          TEXT NOT NULL,
    target      TEXT NOT NULL,
    allowed     INTEGER NOT NULL,
    detail      TEXT,
    bytes_up    INTEGER NOT NULL,
    bytes_down  INTEGER NOT NULL
);
CREATE INDEX idx_egress_run ON egress(run_id);
