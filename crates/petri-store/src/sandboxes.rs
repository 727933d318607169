//! Queries on the `sandboxes` table.

use rusqlite::{OptionalExtension, Row, params};

use crate::{NewSandbox, SandboxRecord, SandboxStatus, Store, StoreError};

const COLUMNS: &str = "id, language, status, agent, created_by, created_at, last_active_at, \
                       expires_at, deleted_at, memory_mb, pids_max, cpu_millis, host_uid, disk_mb";

fn from_row(row: &Row<'_>) -> rusqlite::Result<(SandboxRecord, String)> {
    let status: String = row.get(2)?;
    Ok((
        SandboxRecord {
            id: row.get(0)?,
            language: row.get(1)?,
            status: SandboxStatus::Created,
            agent: row.get(3)?,
            created_by: row.get(4)?,
            created_at: row.get(5)?,
            last_active_at: row.get(6)?,
            expires_at: row.get(7)?,
            deleted_at: row.get(8)?,
            memory_mb: row.get(9)?,
            pids_max: row.get(10)?,
            cpu_millis: row.get(11)?,
            host_uid: row.get(12)?,
            disk_mb: row.get(13)?,
        },
        status,
    ))
}

fn finish((mut record, status): (SandboxRecord, String)) -> Result<SandboxRecord, StoreError> {
    record.status = SandboxStatus::parse(status)?;
    Ok(record)
}

impl Store {
    /// Inserts a new sandbox in state `created`. With `host_uid_base`, the sandbox gets the
    /// next host uid above every uid ever given (one statement, so concurrent inserts cannot
    /// pick the same one).
    pub fn insert_sandbox(&self, new: &NewSandbox) -> Result<(), StoreError> {
        self.conn().execute(
            "INSERT INTO sandboxes (id, language, status, agent, created_by, created_at, \
             last_active_at, expires_at, memory_mb, pids_max, cpu_millis, disk_mb, host_uid) \
             VALUES (?1, ?2, 'created', ?3, ?4, ?5, ?5, ?6, ?7, ?8, ?9, ?11, \
             CASE WHEN ?10 IS NULL THEN NULL \
             ELSE MAX(?10, (SELECT COALESCE(MAX(host_uid) + 1, 0) FROM sandboxes)) END)",
            params![
                new.id,
                new.language,
                new.agent,
                new.created_by,
                new.created_at,
                new.expires_at,
                new.memory_mb,
                new.pids_max,
                new.cpu_millis,
                new.host_uid_base,
                new.disk_mb
            ],
        )?;
        Ok(())
    }

    /// Any sandbox, live or soft-deleted.
    pub fn sandbox(&self, id: &str) -> Result<Option<SandboxRecord>, StoreError> {
        let sql = format!("SELECT {COLUMNS} FROM sandboxes WHERE id = ?1");
        let row = self.conn().query_row(&sql, [id], from_row).optional()?;
        row.map(finish).transpose()
    }

    /// All sandboxes (including soft-deleted), newest first.
    pub fn list_sandboxes(
        &self,
        limit: u64,
        offset: u64,
    ) -> Result<Vec<SandboxRecord>, StoreError> {
        let sql = format!(
            "SELECT {COLUMNS} FROM sandboxes ORDER BY created_at DESC, rowid DESC LIMIT ?1 OFFSET ?2"
        );
        self.collect(&sql, params![limit, offset])
    }

    /// Sandboxes that are neither deleted nor past their expiry, newest first.
    pub fn list_live_sandboxes(&self, now: &str) -> Result<Vec<SandboxRecord>, StoreError> {
        let sql = format!(
            "SELECT {COLUMNS} FROM sandboxes WHERE deleted_at IS NULL AND expires_at > ?1 \
             ORDER BY created_at DESC, rowid DESC"
        );
        self.collect(&sql, params![now])
    }

    /// Records activity: pushes the expiry out and marks a sandbox that has run as `active`.
    pub fn touch_sandbox(
        &self,
        id: &str,
        now: &str,
        expires_at: &str,
        ran: bool,
    ) -> Result<(), StoreError> {
        self.conn().execute(
            "UPDATE sandboxes SET last_active_at = ?2, expires_at = ?3, \
             status = CASE WHEN ?4 AND status = 'created' THEN 'active' ELSE status END \
             WHERE id = ?1 AND deleted_at IS NULL",
            params![id, now, expires_at, ran],
        )?;
        Ok(())
    }

    /// Soft-deletes a live sandbox. Returns `false` (and changes nothing) when it was already
    /// deleted or never existed, so `deleted_at` is written exactly once.
    pub fn soft_delete_sandbox(
        &self,
        id: &str,
        status: SandboxStatus,
        now: &str,
    ) -> Result<bool, StoreError> {
        let changed = self.conn().execute(
            "UPDATE sandboxes SET status = ?2, deleted_at = ?3 WHERE id = ?1 AND deleted_at IS NULL",
            params![id, status.as_str(), now],
        )?;
        Ok(changed == 1)
    }

    /// Expires a live sandbox, but only if its expiry (re-read now, in the same statement) has
    /// passed: activity between a sweep's listing and this call saves it.
    pub fn expire_sandbox(&self, id: &str, now: &str) -> Result<bool, StoreError> {
        let changed = self.conn().execute(
            "UPDATE sandboxes SET status = 'expired', deleted_at = ?2 \
             WHERE id = ?1 AND deleted_at IS NULL AND expires_at <= ?2",
            params![id, now],
        )?;
        Ok(changed == 1)
    }

    /// Live sandboxes whose expiry has passed.
    pub fn expired_sandbox_ids(&self, now: &str) -> Result<Vec<String>, StoreError> {
        let conn = self.conn();
        let mut stmt = conn.prepare(
            "SELECT id FROM sandboxes WHERE deleted_at IS NULL AND expires_at <= ?1 ORDER BY expires_at",
        )?;
        let ids = stmt
            .query_map([now], |row| row.get(0))?
            .collect::<Result<Vec<String>, _>>()?;
        Ok(ids)
    }

    /// Ids of soft-deleted sandboxes, so start-up can finish freeing their disk.
    pub fn deleted_sandbox_ids(&self) -> Result<Vec<String>, StoreError> {
        let conn = self.conn();
        let mut stmt = conn.prepare("SELECT id FROM sandboxes WHERE deleted_at IS NOT NULL")?;
        let ids = stmt
            .query_map([], |row| row.get(0))?
            .collect::<Result<Vec<String>, _>>()?;
        Ok(ids)
    }

    fn collect(
        &self,
        sql: &str,
        params: impl rusqlite::Params,
    ) -> Result<Vec<SandboxRecord>, StoreError> {
        let conn = self.conn();
        let mut stmt = conn.prepare(sql)?;
        let rows = stmt.query_map(params, from_row)?;
        rows.map(|row| finish(row?)).collect()
    }
}
