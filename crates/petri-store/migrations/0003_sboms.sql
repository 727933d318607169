-- CycloneDX documents, stored once per distinct content; installs and runs point at them, so
-- a run whose dependencies did not change shares its predecessor's bill of materials.
CREATE TABLE sboms (
    id         TEXT PRIMARY KEY,
    document   TEXT NOT NULL,
    created_at TEXT NOT NULL
);
ALTER TABLE installs ADD COLUMN sbom_id TEXT REFERENCES sboms(id);
ALTER TABLE runs ADD COLUMN sbom_id TEXT REFERENCES sboms(id);
