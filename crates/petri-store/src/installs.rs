//! Queries on `installs` (install-once bookkeeping) and `egress` (the proxy's audit log).

use rusqlite::{OptionalExtension, params};

use crate::{EgressRecord, InstallRecord, Store, StoreError};

impl Store {
    /// Fingerprint of the sandbox's last successful install.
    pub fn install_fingerprint(&self, sandbox_id: &str) -> Result<Option<String>, StoreError> {
        let value = self
            .conn()
            .query_row(
                "SELECT fingerprint FROM installs WHERE sandbox_id = ?1",
                [sandbox_id],
                |row| row.get(0),
            )
            .optional()?;
        Ok(value)
    }

    /// Records a successful install and the bill of materials it produced.
    pub fn record_install(&self, install: &InstallRecord) -> Result<(), StoreError> {
        self.conn().execute(
            "INSERT INTO installs (sandbox_id, fingerprint, source, installed_at, run_id, sbom_id) \
             VALUES (?1, ?2, ?3, ?4, ?5, ?6) ON CONFLICT(sandbox_id) DO UPDATE SET \
             fingerprint = excluded.fingerprint, source = excluded.source, \
             installed_at = excluded.installed_at, run_id = excluded.run_id, sbom_id = excluded.sbom_id",
            params![
                install.sandbox_id,
                install.fingerprint,
                install.source,
                install.installed_at,
                install.run_id,
                install.sbom_id
            ],
        )?;
        Ok(())
    }

    /// The bill of materials of the sandbox's current dependencies.
    pub fn install_sbom_id(&self, sandbox_id: &str) -> Result<Option<String>, StoreError> {
        let value = self
            .conn()
            .query_row(
                "SELECT sbom_id FROM installs WHERE sandbox_id = ?1",
                [sandbox_id],
                |row| row.get(0),
            )
            .optional()?;
        Ok(value.flatten())
    }

    /// Stores a bill of materials (once per `id`, its content hash).
    pub fn save_sbom(&self, id: &str, document: &str, at: &str) -> Result<(), StoreError> {
        self.conn().execute(
            "INSERT OR IGNORE INTO sboms (id, document, created_at) VALUES (?1, ?2, ?3)",
            params![id, document, at],
        )?;
        Ok(())
    }

    /// Points a run at the bill of materials of the dependencies it ran with.
    pub fn set_run_sbom(&self, run_id: &str, sbom_id: &str) -> Result<(), StoreError> {
        self.conn().execute(
            "UPDATE runs SET sbom_id = ?2 WHERE id = ?1",
            params![run_id, sbom_id],
        )?;
        Ok(())
    }

    /// The bill of materials a run ran with: `(sbom_id, document)`.
    pub fn run_sbom(&self, run_id: &str) -> Result<Option<(String, String)>, StoreError> {
        let value = self
            .conn()
            .query_row(
                "SELECT s.id, s.document FROM runs r JOIN sboms s ON s.id = r.sbom_id WHERE r.id = ?1",
                [run_id],
                |row| Ok((row.get(0)?, row.get(1)?)),
            )
            .optional()?;
        Ok(value)
    }

    /// Appends one proxy connection event.
    pub fn record_egress(&self, event: &EgressRecord) -> Result<(), StoreError> {
        self.conn().execute(
            "INSERT INTO egress (sandbox_id, run_id, at, target, allowed, detail, bytes_up, bytes_down) \
             VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8)",
            params![
                event.sandbox_id,
                event.run_id,
                event.at,
                event.target,
                event.allowed,
                event.detail,
                event.bytes_up,
                event.bytes_down
            ],
        )?;
        Ok(())
    }

    /// The proxy connections of one run, in order.
    pub fn egress_of_run(&self, run_id: &str) -> Result<Vec<EgressRecord>, StoreError> {
        let conn = self.conn();
        let mut stmt = conn.prepare(
            "SELECT sandbox_id, run_id, at, target, allowed, detail, bytes_up, bytes_down \
             FROM egress WHERE run_id = ?1 ORDER BY id",
        )?;
        let rows = stmt
            .query_map([run_id], |row| {
                Ok(EgressRecord {
                    sandbox_id: row.get(0)?,
                    run_id: row.get(1)?,
                    at: row.get(2)?,
                    target: row.get(3)?,
                    allowed: row.get(4)?,
                    detail: row.get(5)?,
                    bytes_up: row.get(6)?,
                    bytes_down: row.get(7)?,
                })
            })?
            .collect::<Result<Vec<_>, _>>()?;
        Ok(rows)
    }
}
