//! The engine: sandbox lifecycle, exec orchestration, workspace files and run history.
//!
//! It coordinates the store (what is recorded), the isolation backend (where commands run)
//! and the workspaces on disk. It knows nothing about HTTP.
#![forbid(unsafe_code)]

mod audit;
mod config;
mod error;
mod exec;
mod ids;
mod language;
mod lifecycle;
mod logs;
mod processes;
mod slots;
mod workspace;

use std::sync::Arc;

use chrono::{DateTime, Utc};
use petri_sandbox::{Backend, BackendInfo, Limits, SandboxSpec};
use petri_store::Store;
use serde::Serialize;
use tokio_util::sync::CancellationToken;
use tokio_util::task::TaskTracker;

pub use config::EngineConfig;
pub use error::EngineError;
pub use exec::{
    DoneInfo, ExecEvent, ExecRequest, ExecStream, InstallSummary, TestRequest, TestSummary,
};
pub use language::SUPPORTED_LANGUAGES;
pub use petri_deps::Toolbox;
pub use petri_egress::{
    Allowlist, DEFAULT_ALLOWLIST as DEFAULT_EGRESS_ALLOWLIST, EgressProxy, GO_MIRROR_PROXY,
    MAVEN_MIRROR_REPOSITORY, MirroredRegistries, NPM_MIRROR_REGISTRY, PYPI_MIRROR_INDEX,
    RegistryMirror,
};
pub use petri_sandbox::DiskMode;
pub use petri_store::{AgentMetrics, Metrics, RunRecord, RunStatus, SandboxRecord, SandboxStatus};
pub use processes::ProcessView;
pub use workspace::{ChunkSource, FileContent, FileEntry};

use crate::exec::{ExecJob, run_exec};
use crate::ids::{format_time, is_run_id, is_sandbox_id, now};
use crate::logs::RunLogs;
use crate::slots::Slots;
use crate::workspace::{Owner, RelPath, Workspaces, ZipLimits};

/// A request to create a sandbox.
#[derive(Debug, Clone, Default)]
pub struct CreateSandbox {
    pub language: String,
    pub agent: Option<String>,
    pub created_by: String,
    pub memory_mb: Option<u64>,
    pub pids: Option<u64>,
    pub cpus: Option<f64>,
    pub disk_mb: Option<u64>,
}

/// Limits a client asked for at create, validated.
#[derive(Debug, Clone, Copy)]
struct RequestedLimits {
    memory_mb: Option<u64>,
    pids: Option<u64>,
    cpu_millis: Option<u64>,
    disk_mb: Option<u64>,
}

/// A sandbox as clients see it: its record plus live state.
#[derive(Debug, Clone)]
pub struct SandboxView {
    pub record: SandboxRecord,
    /// An exec is running right now.
    pub running: bool,
    pub limits: Limits,
}

impl SandboxView {
    /// `running` while an exec runs, else the stored lifecycle status.
    pub fn status(&self) -> &'static str {
        if self.running {
            "running"
        } else {
            self.record.status.as_str()
        }
    }
}

/// What `/health` and the start-up line report.
#[derive(Debug, Clone, Serialize)]
pub struct EngineInfo {
    pub isolation: BackendInfo,
    pub default_limits: Limits,
    pub workspace_root: String,
    pub sandbox_ttl_seconds: u64,
    pub exec_timeout_seconds: u64,
    pub output_max_bytes: u64,
    pub log_max_bytes: u64,
    pub upload_max_bytes: u64,
    /// Dependency installs: whether they can run here, with which installer, reaching what.
    pub installs: InstallInfo,
    /// First host uid given to sandboxes, when each gets its own.
    pub host_uid_base: Option<u32>,
    /// How workspace disk space is limited.
    #[serde(skip)]
    pub disk: petri_sandbox::DiskMode,
}

/// The dependency-install part of [`EngineInfo`].
#[derive(Debug, Clone, Serialize)]
pub struct InstallInfo {
    pub available: bool,
    pub python_installer: &'static str,
    pub egress_allowlist: Vec<String>,
}

/// The engine. Share it as `Arc<Engine>`.
#[derive(Debug)]
pub struct Engine {
    config: EngineConfig,
    store: Arc<Store>,
    backend: Arc<dyn Backend>,
    workspaces: Workspaces,
    logs: Arc<RunLogs>,
    slots: Slots,
    tasks: TaskTracker,
    shutdown: CancellationToken,
    /// Permits for running execs (see [`EngineConfig::max_running_execs`]).
    running: tokio::sync::Semaphore,
    /// Serves the registry proxy of dependency installs; `None` where the host cannot
    /// give an exec its own network namespace.
    egress: Option<EgressProxy>,
    /// Where proxy connection events go (the registry).
    audit: Arc<dyn petri_egress::AuditSink>,
}

fn not_found(id: &str) -> EngineError {
    EngineError::SandboxNotFound { id: id.to_string() }
}

fn invalid(field: &'static str, reason: impl Into<String>) -> EngineError {
    EngineError::InvalidInput {
        field,
        reason: reason.into(),
    }
}

impl Engine {
    /// Runs `work` against the store on a blocking thread.
    pub(crate) async fn db<T, F>(&self, work: F) -> Result<T, EngineError>
    where
        T: Send + 'static,
        F: FnOnce(&Store) -> Result<T, petri_store::StoreError> + Send + 'static,
    {
        let store = self.store.clone();
        tokio::task::spawn_blocking(move || work(&store))
            .await
            .map_err(|e| EngineError::Task(e.to_string()))?
            .map_err(EngineError::from)
    }

    pub(crate) fn ttl_from(&self, from: DateTime<Utc>) -> String {
        let ttl =
            chrono::Duration::from_std(self.config.sandbox_ttl).unwrap_or(chrono::Duration::MAX);
        format_time(
            from.checked_add_signed(ttl)
                .unwrap_or(DateTime::<Utc>::MAX_UTC),
        )
    }

    /// What the backend needs to run an exec of `record`.
    pub(crate) fn sandbox_spec(&self, record: &SandboxRecord) -> SandboxSpec {
        SandboxSpec {
            id: record.id.clone(),
            workspace: self.workspaces.path(&record.id),
            limits: self.limits_of(record),
            host_uid: record.host_uid,
        }
    }

    pub(crate) fn limits_of(&self, record: &SandboxRecord) -> Limits {
        let default = self.config.default_limits;
        Limits {
            memory_bytes: record.memory_mb.map_or(default.memory_bytes, |mb| mb << 20),
            pids: record.pids_max.unwrap_or(default.pids),
            cpu_millis: record.cpu_millis.unwrap_or(default.cpu_millis),
            disk_bytes: record.disk_mb.map_or(default.disk_bytes, |mb| mb << 20),
        }
    }

    pub(crate) fn schedule_retention(&self) {
        let (logs, store) = (self.logs.clone(), self.store.clone());
        self.tasks.spawn_blocking(move || {
            if let Err(e) = logs.enforce_retention(&store) {
                tracing::error!(error = %e, "log retention failed");
            }
        });
    }

    fn view(&self, record: SandboxRecord) -> SandboxView {
        SandboxView {
            running: self.slots.is_running(&record.id),
            limits: self.limits_of(&record),
            record,
        }
    }

    /// What this server enforces.
    pub fn info(&self) -> EngineInfo {
        EngineInfo {
            isolation: self.backend.info(),
            default_limits: self.config.default_limits,
            workspace_root: self.config.root.display().to_string(),
            sandbox_ttl_seconds: self.config.sandbox_ttl.as_secs(),
            exec_timeout_seconds: self.config.exec_timeout_default.as_secs(),
            output_max_bytes: self.config.output_max_bytes,
            log_max_bytes: self.config.log_max_bytes,
            upload_max_bytes: self.config.upload_max_bytes,
            installs: InstallInfo {
                available: self.egress.is_some(),
                python_installer: if self.config.toolbox.uv.is_some() {
                    "uv"
                } else {
                    "pip"
                },
                egress_allowlist: self
                    .egress
                    .as_ref()
                    .map(|e| e.allowlist().entries())
                    .unwrap_or_default(),
            },
            host_uid_base: self.config.host_uid_base,
            disk: self.workspaces.disk_mode().clone(),
        }
    }

    /// The configuration the engine runs with.
    pub fn config(&self) -> &EngineConfig {
        &self.config
    }

    /// Checks client-requested limits against the server maximums; `None` keeps the default.
    fn validate_limits(&self, request: &CreateSandbox) -> Result<RequestedLimits, EngineError> {
        let max = self.config.max_limits;
        let max_mb = max.memory_bytes >> 20;
        if let Some(mb) = request.memory_mb
            && !(16..=max_mb).contains(&mb)
        {
            return Err(invalid(
                "memory_mb",
                format!("must be between 16 and {max_mb}"),
            ));
        }
        if let Some(pids) = request.pids
            && !(8..=max.pids).contains(&pids)
        {
            return Err(invalid(
                "pids",
                format!("must be between 8 and {}", max.pids),
            ));
        }
        let max_disk_mb = max.disk_bytes >> 20;
        if let Some(mb) = request.disk_mb
            && !(16..=max_disk_mb).contains(&mb)
        {
            return Err(invalid(
                "disk_mb",
                format!("must be between 16 and {max_disk_mb}"),
            ));
        }
        let max_cores = max.cpu_millis as f64 / 1000.0;
        let cpu_millis = match request.cpus {
            None => None,
            Some(cpus) if cpus.is_finite() && (0.05..=max_cores).contains(&cpus) => {
                Some((cpus * 1000.0).round() as u64)
            }
            Some(_) => {
                return Err(invalid(
                    "cpus",
                    format!("must be between 0.05 and {max_cores}"),
                ));
            }
        };
        Ok(RequestedLimits {
            memory_mb: request.memory_mb,
            pids: request.pids,
            cpu_millis,
            disk_mb: request.disk_mb,
        })
    }

    /// Creates a sandbox and its empty workspace.
    pub async fn create_sandbox(&self, request: CreateSandbox) -> Result<SandboxView, EngineError> {
        let language = language::parse_language(&request.language)?;
        for (field, value) in [
            ("agent", request.agent.as_deref().unwrap_or("")),
            ("created_by", &request.created_by),
        ] {
            if value.chars().count() > 256 {
                return Err(invalid(field, "must be at most 256 characters"));
            }
        }
        let limits = self.validate_limits(&request)?;
        let id = ids::new_sandbox_id();
        let created = now();
        self.workspaces.create(&id)?;
        let new = petri_store::NewSandbox {
            id: id.clone(),
            language: language.to_string(),
            agent: request.agent,
            created_by: request.created_by,
            created_at: format_time(created),
            expires_at: self.ttl_from(created),
            memory_mb: limits.memory_mb,
            pids_max: limits.pids,
            cpu_millis: limits.cpu_millis,
            disk_mb: limits.disk_mb,
            host_uid_base: self.config.host_uid_base,
        };
        let lookup = id.clone();
        let inserted = self
            .db(move |store| {
                store.insert_sandbox(&new)?;
                store.sandbox(&lookup)
            })
            .await;
        let handed_over = async |record: &SandboxRecord| {
            let owner = Owner::new(record.host_uid);
            let (workspaces, id) = (self.workspaces.clone(), record.id.clone());
            let disk_bytes = self.limits_of(record).disk_bytes;
            tokio::task::spawn_blocking(move || {
                workspaces.provision(&id, disk_bytes, owner)?;
                workspaces.hand_over(&id, owner)
            })
            .await
            .map_err(|e| EngineError::Task(e.to_string()))?
        };
        match inserted {
            Ok(Some(record)) => match handed_over(&record).await {
                Ok(()) => Ok(self.view(record)),
                Err(e) => {
                    // Never leave a sandbox whose workspace its code cannot use.
                    let (doomed, at) = (record.id.clone(), format_time(now()));
                    let _ = self
                        .db(move |store| {
                            store.soft_delete_sandbox(&doomed, SandboxStatus::Deleted, &at)
                        })
                        .await;
                    let _ = self.workspaces.remove(&record.id);
                    Err(e)
                }
            },
            Ok(None) => Err(EngineError::Task("sandbox vanished after insert".into())),
            Err(e) => {
                let _ = self.workspaces.remove(&id);
                Err(e)
            }
        }
    }

    /// Any sandbox that was ever created, deleted or not.
    async fn record(&self, id: &str) -> Result<SandboxRecord, EngineError> {
        if !is_sandbox_id(id) {
            return Err(not_found(id));
        }
        let lookup = id.to_string();
        self.db(move |store| store.sandbox(&lookup))
            .await?
            .ok_or_else(|| not_found(id))
    }

    /// A sandbox that is not deleted.
    async fn live_record(&self, id: &str) -> Result<SandboxRecord, EngineError> {
        let record = self.record(id).await?;
        if record.deleted_at.is_some() {
            return Err(not_found(id));
        }
        Ok(record)
    }

    /// A live sandbox.
    pub async fn sandbox(&self, id: &str) -> Result<SandboxView, EngineError> {
        Ok(self.view(self.live_record(id).await?))
    }

    /// Every sandbox, deleted ones included, newest first.
    pub async fn list_sandboxes(
        &self,
        limit: u64,
        offset: u64,
    ) -> Result<Vec<SandboxView>, EngineError> {
        let records = self
            .db(move |store| store.list_sandboxes(limit, offset))
            .await?;
        Ok(records.into_iter().map(|r| self.view(r)).collect())
    }

    /// Sandboxes that are neither deleted nor expired, newest first.
    pub async fn list_active(&self) -> Result<Vec<SandboxView>, EngineError> {
        let now = format_time(now());
        let records = self
            .db(move |store| store.list_live_sandboxes(&now))
            .await?;
        Ok(records.into_iter().map(|r| self.view(r)).collect())
    }

    /// How often a running exec renews its sandbox's expiry.
    pub(crate) fn heartbeat(&self) -> std::time::Duration {
        (self.config.sandbox_ttl / 2).clamp(
            std::time::Duration::from_secs(1),
            std::time::Duration::from_secs(60),
        )
    }

    /// [`Engine::touch`] for background callers: failures are logged, not returned.
    pub(crate) async fn record_activity(&self, id: &str) {
        if let Err(e) = self.touch(id).await {
            tracing::warn!(error = %e, sandbox_id = id, "cannot record sandbox activity");
        }
    }

    /// Records activity (uploads count, as execs do) so the TTL runs from the last one.
    async fn touch(&self, id: &str) -> Result<(), EngineError> {
        let at = now();
        let (id, now, expires) = (id.to_string(), format_time(at), self.ttl_from(at));
        self.db(move |store| store.touch_sandbox(&id, &now, &expires, false))
            .await
    }

    /// Writes one uploaded file at `filename` (nested paths create directories).
    pub async fn upload_file(
        &self,
        id: &str,
        filename: &str,
        body: impl ChunkSource,
    ) -> Result<u64, EngineError> {
        let record = self.live_record(id).await?;
        let path = RelPath::parse(filename)?;
        let owner = Owner::new(record.host_uid);
        let written = self
            .workspaces
            .write_file(id, &path, body, self.config.upload_max_bytes, owner)
            .await?;
        self.touch(id).await?;
        Ok(written)
    }

    /// Extracts an uploaded zip into the workspace. Returns the number of files written.
    pub async fn upload_zip(&self, id: &str, body: impl ChunkSource) -> Result<usize, EngineError> {
        let record = self.live_record(id).await?;
        let limits = ZipLimits {
            max_entries: self.config.zip_max_entries,
            max_bytes: self.config.zip_max_bytes,
        };
        let owner = Owner::new(record.host_uid);
        let files = self
            .workspaces
            .import_zip(id, body, self.config.upload_max_bytes, limits, owner)
            .await?;
        self.touch(id).await?;
        Ok(files)
    }

    /// Lists the workspace (or the directory `path` of it).
    pub async fn list_files(
        &self,
        id: &str,
        path: Option<&str>,
    ) -> Result<Vec<FileEntry>, EngineError> {
        self.live_record(id).await?;
        let path = path
            .filter(|p| !p.is_empty())
            .map(RelPath::parse)
            .transpose()?;
        let workspaces = self.workspaces.clone();
        let id = id.to_string();
        tokio::task::spawn_blocking(move || workspaces.list(&id, path.as_ref()))
            .await
            .map_err(|e| EngineError::Task(e.to_string()))?
    }

    /// Deletes a file or directory of the workspace.
    pub async fn delete_file(&self, id: &str, path: &str) -> Result<(), EngineError> {
        self.live_record(id).await?;
        let path = RelPath::parse(path)?;
        let workspaces = self.workspaces.clone();
        let sandbox = id.to_string();
        tokio::task::spawn_blocking(move || workspaces.remove_path(&sandbox, &path))
            .await
            .map_err(|e| EngineError::Task(e.to_string()))??;
        self.touch(id).await
    }

    /// Opens a workspace file for download (or lists a directory).
    pub async fn read_file(&self, id: &str, path: &str) -> Result<FileContent, EngineError> {
        self.live_record(id).await?;
        let path = RelPath::parse(path)?;
        let workspaces = self.workspaces.clone();
        let id = id.to_string();
        tokio::task::spawn_blocking(move || workspaces.read(&id, &path))
            .await
            .map_err(|e| EngineError::Task(e.to_string()))?
    }

    /// Checks a command before anything runs; returns the timeout it gets (`None`: the
    /// request asked for none and `default` is `None`).
    fn validate_exec(
        &self,
        request: &ExecRequest,
        default: Option<std::time::Duration>,
    ) -> Result<Option<std::time::Duration>, EngineError> {
        if self.shutdown.is_cancelled() {
            return Err(EngineError::ShuttingDown);
        }
        if request.command.trim().is_empty() {
            return Err(invalid("command", "must not be empty"));
        }
        if request.command.contains('\0') {
            return Err(invalid("command", "must not contain NUL bytes"));
        }
        if request.command.len() > 128 * 1024 {
            return Err(invalid("command", "must be at most 128 KiB"));
        }
        if let Some(test) = &request.test {
            validate_test(test)?;
        }
        let max = self.config.exec_timeout_max.as_secs();
        match request.timeout_seconds {
            None => Ok(default),
            Some(secs) if (1..=max).contains(&secs) => {
                Ok(Some(std::time::Duration::from_secs(secs)))
            }
            Some(_) => Err(invalid(
                "timeout",
                format!("must be between 1 and {max} seconds"),
            )),
        }
    }

    /// Starts a command. Errors come back before any output; afterwards the stream always
    /// ends with one `done`, and the command runs to completion even if the stream is dropped.
    pub async fn exec(
        self: &Arc<Self>,
        id: &str,
        request: ExecRequest,
    ) -> Result<ExecStream, EngineError> {
        let timeout = self.validate_exec(&request, Some(self.config.exec_timeout_default))?;
        let sandbox = self.live_record(id).await?;
        let slot = self.slots.get_or_create(id);
        let queued = slot.waiting.load(std::sync::atomic::Ordering::SeqCst);
        if queued >= self.config.exec_queue_max {
            return Err(EngineError::SandboxBusy {
                id: id.to_string(),
                queued,
            });
        }
        let (events, stream) = tokio::sync::mpsc::unbounded_channel();
        let job = ExecJob {
            run_id: ids::new_run_id(),
            sandbox,
            command: request.command,
            test: request.test,
            timeout,
            slot,
            events,
            background: None,
        };
        self.tasks.spawn(run_exec(self.clone(), job, None));
        Ok(stream)
    }

    /// The test-mode server's output of a run (empty for other runs).
    pub async fn run_server_output(&self, run_id: &str) -> Result<Vec<u8>, EngineError> {
        let run = self.run(run_id).await?;
        Ok(std::fs::read(self.logs.server_path(&run.id)).unwrap_or_default())
    }

    /// Runs of a sandbox (deleted ones keep their history), newest first.
    pub async fn runs(&self, id: &str) -> Result<Vec<RunRecord>, EngineError> {
        self.record(id).await?;
        let id = id.to_string();
        self.db(move |store| store.list_runs(&id)).await
    }

    /// Most recent runs of all sandboxes.
    pub async fn recent_runs(&self, limit: u64) -> Result<Vec<RunRecord>, EngineError> {
        self.db(move |store| store.recent_runs(limit)).await
    }

    /// One run.
    pub async fn run(&self, run_id: &str) -> Result<RunRecord, EngineError> {
        let missing = || EngineError::RunNotFound {
            id: run_id.to_string(),
        };
        if !is_run_id(run_id) {
            return Err(missing());
        }
        let lookup = run_id.to_string();
        self.db(move |store| store.run(&lookup))
            .await?
            .ok_or_else(missing)
    }

    /// A run's stored output (partial while it runs).
    pub async fn run_output(&self, run_id: &str) -> Result<tokio::fs::File, EngineError> {
        let run = self.run(run_id).await?;
        if run.output_evicted {
            return Err(EngineError::OutputEvicted { id: run.id });
        }
        match tokio::fs::File::open(self.logs.path(&run.id)).await {
            Ok(file) => Ok(file),
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
                Err(EngineError::OutputEvicted { id: run.id })
            }
            Err(e) => Err(EngineError::Io {
                context: format!("cannot open output of {}", run.id),
                source: e,
            }),
        }
    }

    /// The CycloneDX bill of materials of the dependencies a run ran with.
    pub async fn run_sbom(&self, run_id: &str) -> Result<String, EngineError> {
        let run = self.run(run_id).await?;
        let id = run.id.clone();
        self.db(move |store| store.run_sbom(&id))
            .await?
            .map(|(_, document)| document)
            .ok_or(EngineError::SbomNotFound { id: run.id })
    }

    /// Connections a run attempted through the registry proxy.
    pub async fn run_egress(
        &self,
        run_id: &str,
    ) -> Result<Vec<petri_store::EgressRecord>, EngineError> {
        let run = self.run(run_id).await?;
        self.db(move |store| store.egress_of_run(&run.id)).await
    }

    /// The v0.11 metrics.
    pub async fn metrics(&self) -> Result<Metrics, EngineError> {
        self.db(|store| store.metrics()).await
    }
}

/// Checks a test-mode request before anything runs.
fn validate_test(test: &exec::TestRequest) -> Result<(), EngineError> {
    if let Some(command) = &test.test_command
        && (command.trim().is_empty() || command.contains('\0') || command.len() > 16 * 1024)
    {
        return Err(invalid(
            "test_command",
            "must be a non-empty command of at most 16 KiB without NUL bytes",
        ));
    }
    if test.ready_port == Some(0) {
        return Err(invalid("ready_port", "must be between 1 and 65535"));
    }
    if let Some(path) = &test.ready_path
        && (!path.starts_with('/')
            || path.len() > 2048
            || path.chars().any(|c| c.is_control() || c == ' '))
    {
        return Err(invalid(
            "ready_path",
            "must be an HTTP path starting with / (no spaces or control characters)",
        ));
    }
    if let Some(secs) = test.ready_timeout_seconds
        && !(1..=600).contains(&secs)
    {
        return Err(invalid(
            "ready_timeout",
            "must be between 1 and 600 seconds",
        ));
    }
    Ok(())
}
