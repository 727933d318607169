//! Engine settings. The binary fills them from flags and `PETRI_*` variables.

use std::path::PathBuf;
use std::time::Duration;

use petri_sandbox::Limits;

/// Everything the engine needs to know about its host and policy.
#[derive(Debug, Clone)]
pub struct EngineConfig {
    /// All state lives here: `registry.db`, `sandboxes/`, `logs/`, `staging/`, `runtime/`.
    pub root: PathBuf,
    /// Idle time after which a sandbox is soft-deleted.
    pub sandbox_ttl: Duration,
    /// How often the sweeper looks for idle sandboxes.
    pub sweep_interval: Duration,
    /// Timeout of an exec that does not ask for one.
    pub exec_timeout_default: Duration,
    /// The largest timeout an exec may ask for.
    pub exec_timeout_max: Duration,
    /// Output streamed and stored per run.
    pub output_max_bytes: u64,
    /// Total size of kept run outputs; the oldest are evicted beyond it.
    pub log_max_bytes: u64,
    /// Largest accepted upload (file or zip).
    pub upload_max_bytes: u64,
    /// Zip-bomb guards: entries and total uncompressed bytes of one archive.
    pub zip_max_entries: usize,
    pub zip_max_bytes: u64,
    /// Limits of a sandbox created without its own.
    pub default_limits: Limits,
    /// The largest limits a client may ask for.
    pub max_limits: Limits,
    /// Execs allowed to wait behind a running one in the same sandbox.
    pub exec_queue_max: usize,
    /// Background processes one sandbox may have running at once.
    pub background_max: usize,
    /// Execs running at once across all sandboxes; more wait their turn (streaming keepalives),
    /// so a burst of sandboxes cannot commit more memory than the host has.
    pub max_running_execs: usize,
    /// Longest a dependency install may take.
    pub install_timeout: Duration,
    /// Installer binaries available inside sandboxes.
    pub toolbox: petri_deps::Toolbox,
    /// Give each new sandbox its own host uid, from this one up (the server must be root);
    /// `None`: sandboxes run as the server's uid.
    pub host_uid_base: Option<u32>,
}

impl EngineConfig {
    /// Defaults rooted at `root`, as documented in the README.
    pub fn with_root(root: PathBuf) -> Self {
        Self {
            root,
            sandbox_ttl: Duration::from_secs(3600),
            sweep_interval: Duration::from_secs(60),
            exec_timeout_default: Duration::from_secs(300),
            exec_timeout_max: Duration::from_secs(3600),
            output_max_bytes: 10 << 20,
            log_max_bytes: 500 << 20,
            upload_max_bytes: 100 << 20,
            zip_max_entries: 10_000,
            zip_max_bytes: 1 << 30,
            default_limits: Limits {
                memory_bytes: 512 << 20,
                pids: 256,
                cpu_millis: 1000,
                disk_bytes: 1 << 30,
            },
            max_limits: Limits {
                memory_bytes: 8 << 30,
                pids: 4096,
                cpu_millis: 8000,
                disk_bytes: 10 << 30,
            },
            exec_queue_max: 8,
            background_max: 8,
            max_running_execs: 32,
            install_timeout: Duration::from_secs(600),
            toolbox: petri_deps::Toolbox::default(),
            host_uid_base: None,
        }
    }

    pub(crate) fn db_path(&self) -> PathBuf {
        self.root.join("registry.db")
    }

    pub(crate) fn sandboxes_dir(&self) -> PathBuf {
        self.root.join("sandboxes")
    }

    pub(crate) fn logs_dir(&self) -> PathBuf {
        self.root.join("logs")
    }

    pub(crate) fn staging_dir(&self) -> PathBuf {
        self.root.join("staging")
    }

    /// Server-owned files the isolation backend generates.
    pub fn runtime_dir(&self) -> PathBuf {
        self.root.join("runtime")
    }
}
