//! Queries on the `runs` table, including log-retention bookkeeping.

use rusqlite::{OptionalExtension, Row, params};

use crate::{NewRun, RunOutcome, RunRecord, RunStatus, Store, StoreError};

const COLUMNS: &str = "id, sandbox_id, command, status, started_at, completed_at, duration_ms, \
                       exit_code, error, timeout_seconds, output_bytes, output_truncated, output_evicted, \
                       test_summary, background";

fn from_row(row: &Row<'_>) -> rusqlite::Result<(RunRecord, String)> {
    Ok((
        RunRecord {
            id: row.get(0)?,
            sandbox_id: row.get(1)?,
            command: row.get(2)?,
            status: RunStatus::Running,
            started_at: row.get(4)?,
            completed_at: row.get(5)?,
            duration_ms: row.get(6)?,
            exit_code: row.get(7)?,
            error: row.get(8)?,
            timeout_seconds: row.get(9)?,
            output_bytes: row.get(10)?,
            output_truncated: row.get(11)?,
            output_evicted: row.get(12)?,
            test_summary: row.get(13)?,
            background: row.get(14)?,
        },
        row.get(3)?,
    ))
}

fn finish((mut record, status): (RunRecord, String)) -> Result<RunRecord, StoreError> {
    record.status = RunStatus::parse(status)?;
    Ok(record)
}

impl Store {
    /// Records a run as `running`, before its command starts.
    pub fn insert_run(&self, run: &NewRun) -> Result<(), StoreError> {
        self.conn().execute(
            "INSERT INTO runs (id, sandbox_id, command, status, started_at, timeout_seconds, \
             background) VALUES (?1, ?2, ?3, 'running', ?4, ?5, ?6)",
            params![
                run.id,
                run.sandbox_id,
                run.command,
                run.started_at,
                run.timeout_seconds,
                run.background
            ],
        )?;
        Ok(())
    }

    /// Completes a running run. A run that was already completed is left untouched.
    pub fn complete_run(&self, id: &str, outcome: &RunOutcome) -> Result<(), StoreError> {
        self.conn().execute(
            "UPDATE runs SET status = ?2, completed_at = ?3, duration_ms = ?4, exit_code = ?5, \
             error = ?6, output_bytes = ?7, output_truncated = ?8, test_summary = ?9 \
             WHERE id = ?1 AND status = 'running'",
            params![
                id,
                outcome.status.as_str(),
                outcome.completed_at,
                outcome.duration_ms,
                outcome.exit_code,
                outcome.error,
                outcome.output_bytes,
                outcome.output_truncated,
                outcome.test_summary
            ],
        )?;
        Ok(())
    }

    /// One run by id.
    pub fn run(&self, id: &str) -> Result<Option<RunRecord>, StoreError> {
        let sql = format!("SELECT {COLUMNS} FROM runs WHERE id = ?1");
        let row = self.conn().query_row(&sql, [id], from_row).optional()?;
        row.map(finish).transpose()
    }

    /// Runs of one sandbox, newest first.
    pub fn list_runs(&self, sandbox_id: &str) -> Result<Vec<RunRecord>, StoreError> {
        let sql = format!(
            "SELECT {COLUMNS} FROM runs WHERE sandbox_id = ?1 ORDER BY started_at DESC, rowid DESC"
        );
        let conn = self.conn();
        let mut stmt = conn.prepare(&sql)?;
        let rows = stmt.query_map([sandbox_id], from_row)?;
        rows.map(|row| finish(row?)).collect()
    }

    /// Background processes of one sandbox, newest first.
    pub fn list_background_runs(&self, sandbox_id: &str) -> Result<Vec<RunRecord>, StoreError> {
        let sql = format!(
            "SELECT {COLUMNS} FROM runs WHERE sandbox_id = ?1 AND background = 1 \
             ORDER BY started_at DESC, rowid DESC"
        );
        let conn = self.conn();
        let mut stmt = conn.prepare(&sql)?;
        let rows = stmt.query_map([sandbox_id], from_row)?;
        rows.map(|row| finish(row?)).collect()
    }

    /// Most recent runs across all sandboxes, newest first.
    pub fn recent_runs(&self, limit: u64) -> Result<Vec<RunRecord>, StoreError> {
        let sql =
            format!("SELECT {COLUMNS} FROM runs ORDER BY started_at DESC, rowid DESC LIMIT ?1");
        let conn = self.conn();
        let mut stmt = conn.prepare(&sql)?;
        let rows = stmt.query_map([limit], from_row)?;
        rows.map(|row| finish(row?)).collect()
    }

    /// Ids of runs still marked `running` (left open by a crash when called at start-up).
    pub fn open_run_ids(&self) -> Result<Vec<String>, StoreError> {
        let conn = self.conn();
        let mut stmt = conn.prepare("SELECT id FROM runs WHERE status = 'running'")?;
        let ids = stmt
            .query_map([], |row| row.get(0))?
            .collect::<Result<Vec<String>, _>>()?;
        Ok(ids)
    }

    /// Bytes of run output still kept on disk.
    pub fn retained_output_bytes(&self) -> Result<u64, StoreError> {
        let total = self.conn().query_row(
            "SELECT COALESCE(SUM(output_bytes), 0) FROM runs \
             WHERE output_evicted = 0 AND status != 'running'",
            [],
            |row| row.get(0),
        )?;
        Ok(total)
    }

    /// Oldest finished runs whose output is still on disk: `(run_id, output_bytes)`.
    pub fn oldest_retained_outputs(&self, limit: u64) -> Result<Vec<(String, u64)>, StoreError> {
        let conn = self.conn();
        let mut stmt = conn.prepare(
            "SELECT id, output_bytes FROM runs WHERE output_evicted = 0 AND status != 'running' \
             ORDER BY started_at, rowid LIMIT ?1",
        )?;
        let rows = stmt
            .query_map([limit], |row| Ok((row.get(0)?, row.get(1)?)))?
            .collect::<Result<Vec<_>, _>>()?;
        Ok(rows)
    }

    /// Marks a run's output as evicted by log retention; the row itself stays.
    pub fn mark_output_evicted(&self, id: &str) -> Result<(), StoreError> {
        self.conn()
            .execute("UPDATE runs SET output_evicted = 1 WHERE id = ?1", [id])?;
        Ok(())
    }
}
