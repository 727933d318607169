-- The host uid each sandbox runs as, when the server gives sandboxes their own (as root).
-- Allocated once, never reused, never shared: the unique index makes a clash impossible.
ALTER TABLE sandboxes ADD COLUMN host_uid INTEGER;
CREATE UNIQUE INDEX sandboxes_host_uid ON sandboxes (host_uid) WHERE host_uid IS NOT NULL;
