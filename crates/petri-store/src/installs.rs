//! Queries on `installs` (install-once bookkeeping) and `egress` (the proxy's audit log).

use rusqlite::{OptionalExtension, params};

use crate::{EgressRecord, Store, StoreError};

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

    /// Records a successful install.
    pub fn record_install(
        &self,
        sandbox_id: &str,
        fingerprint: &str,
        source: &str,
        at: &str,
        run_id: &str,
    ) -> Result<(), StoreError> {
        self.conn().execute(
            "INSERT INTO installs (sandbox_id, fingerprint, source, installed_at, run_id) \
             VALUES (?1, ?2, ?3, ?4, ?5) ON CONFLICT(sandbox_id) DO UPDATE SET \
             fingerprint = excluded.fingerprint, source = excluded.source, \
             installed_at = excluded.installed_at, run_id = excluded.run_id",
            params![sandbox_id, fingerprint, source, at, run_id],
        )?;
        Ok(())
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
