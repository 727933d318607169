//! The SQLite registry of sandboxes and runs.
//!
//! This crate is the only place SQL lives. It stores what the engine decides (timestamps and
//! state transitions are passed in) and never spawns processes or touches the network.
#![forbid(unsafe_code)]

mod error;
mod installs;
mod metrics;
mod records;
mod runs;
mod sandboxes;

use std::path::Path;
use std::sync::{Mutex, MutexGuard};
use std::time::Duration;

use rusqlite::Connection;

pub use error::StoreError;
pub use records::{
    AgentMetrics, EgressRecord, InstallRecord, Metrics, NewRun, NewSandbox, RunOutcome, RunRecord,
    RunStatus, SandboxRecord, SandboxStatus,
};

/// Ordered schema migrations; `PRAGMA user_version` records how many have been applied.
const MIGRATIONS: &[&str] = &[
    include_str!("../migrations/0001_init.sql"),
    include_str!("../migrations/0002_installs_and_egress.sql"),
    include_str!("../migrations/0003_sboms.sql"),
    include_str!("../migrations/0004_host_uids.sql"),
    include_str!("../migrations/0005_disk_quotas.sql"),
    include_str!("../migrations/0006_test_summaries.sql"),
    include_str!("../migrations/0007_background_runs.sql"),
];

/// A handle on the registry database. Cheap to share behind an `Arc`; every call is short and
/// synchronous, so async callers should run it on a blocking thread.
#[derive(Debug)]
pub struct Store {
    conn: Mutex<Connection>,
}

impl Store {
    /// Opens (creating if needed) the database at `path`, enables WAL and applies migrations.
    pub fn open(path: &Path) -> Result<Self, StoreError> {
        restrict_to_owner(path).map_err(|source| StoreError::Restrict {
            path: path.to_path_buf(),
            source,
        })?;
        let conn = Connection::open(path).map_err(|source| StoreError::Open {
            path: path.to_path_buf(),
            source,
        })?;
        conn.busy_timeout(Duration::from_secs(5))?;
        conn.pragma_update(None, "journal_mode", "WAL")?;
        conn.pragma_update(None, "synchronous", "NORMAL")?;
        conn.pragma_update(None, "foreign_keys", "ON")?;
        let store = Self {
            conn: Mutex::new(conn),
        };
        store.migrate()?;
        Ok(store)
    }

    fn migrate(&self) -> Result<(), StoreError> {
        let mut conn = self.conn();
        let applied: usize = conn.pragma_query_value(None, "user_version", |row| row.get(0))?;
        if applied > MIGRATIONS.len() {
            return Err(StoreError::NewerSchema {
                found: applied,
                known: MIGRATIONS.len(),
            });
        }
        for (index, sql) in MIGRATIONS.iter().enumerate().skip(applied) {
            let tx = conn.transaction()?;
            tx.execute_batch(sql)?;
            tx.pragma_update(None, "user_version", index + 1)?;
            tx.commit()?;
        }
        Ok(())
    }

    fn conn(&self) -> MutexGuard<'_, Connection> {
        // A panic while holding the lock cannot leave SQLite inconsistent (every write is a
        // single statement or a transaction), so a poisoned lock is still safe to use.
        self.conn
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner())
    }
}

#[cfg(test)]
mod tests;

/// Creates the database file readable and writable by its owner only (SQLite gives its WAL
/// and shared-memory files the same mode), or narrows an existing one.
fn restrict_to_owner(path: &Path) -> std::io::Result<()> {
    use std::os::unix::fs::{OpenOptionsExt, PermissionsExt};
    let file = std::fs::OpenOptions::new()
        .create(true)
        .append(true)
        .mode(0o600)
        .open(path)?;
    file.set_permissions(std::fs::Permissions::from_mode(0o600))
}
