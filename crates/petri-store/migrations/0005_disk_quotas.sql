-- Disk space a client asked for at create (NULL: the server's default).
ALTER TABLE sandboxes ADD COLUMN disk_mb INTEGER;
