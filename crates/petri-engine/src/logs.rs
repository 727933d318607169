//! Run output files. They live in a server-private directory that is never mounted into a
//! sandbox, so sandboxed code can neither read nor forge its own (or anyone's) history.

use std::fs::File;
use std::path::PathBuf;

use petri_store::Store;

use crate::EngineError;

/// Where run outputs are kept, and their retention.
#[derive(Debug)]
pub(crate) struct RunLogs {
    dir: PathBuf,
    max_bytes: u64,
    /// Serialises retention passes so two finishing runs do not evict twice.
    retention: std::sync::Mutex<()>,
}

impl RunLogs {
    pub fn new(dir: PathBuf, max_bytes: u64) -> Self {
        Self {
            dir,
            max_bytes,
            retention: std::sync::Mutex::new(()),
        }
    }

    /// `run_id` must be a validated run id.
    pub fn path(&self, run_id: &str) -> PathBuf {
        self.dir.join(format!("{run_id}.log"))
    }

    /// Where a test-mode run keeps its server's output.
    pub fn server_path(&self, run_id: &str) -> PathBuf {
        self.dir.join(format!("{run_id}.server.log"))
    }

    pub fn create_server(&self, run_id: &str) -> Result<File, EngineError> {
        File::create(self.server_path(run_id)).map_err(EngineError::io(format!(
            "cannot create the server log of {run_id}"
        )))
    }

    pub fn create(&self, run_id: &str) -> Result<File, EngineError> {
        File::create(self.path(run_id)).map_err(EngineError::io(format!(
            "cannot create output log of {run_id}"
        )))
    }

    /// Size of a run's output on disk (0 when missing).
    pub fn size(&self, run_id: &str) -> u64 {
        std::fs::metadata(self.path(run_id)).map_or(0, |m| m.len())
    }

    /// Evicts the oldest outputs until the kept total is within `PETRI_LOG_MAX_MB`.
    /// Run rows stay; only their output goes.
    pub fn enforce_retention(&self, store: &Store) -> Result<u64, EngineError> {
        let _guard = self.retention.lock().unwrap_or_else(|p| p.into_inner());
        let mut total = store.retained_output_bytes()?;
        let mut evicted = 0;
        while total > self.max_bytes {
            let batch = store.oldest_retained_outputs(64)?;
            if batch.is_empty() {
                break;
            }
            for (run_id, bytes) in batch {
                if total <= self.max_bytes {
                    break;
                }
                match std::fs::remove_file(self.path(&run_id)) {
                    Err(e) if e.kind() != std::io::ErrorKind::NotFound => {
                        return Err(EngineError::Io {
                            context: format!("cannot evict output of {run_id}"),
                            source: e,
                        });
                    }
                    _ => {}
                }
                store.mark_output_evicted(&run_id)?;
                total = total.saturating_sub(bytes);
                evicted += 1;
            }
        }
        Ok(evicted)
    }
}
