//! Start-up recovery, deletion, the TTL sweeper and shutdown.

use std::os::unix::fs::PermissionsExt;
use std::sync::Arc;
use std::time::Duration;

use petri_sandbox::Backend;
use petri_store::{RunOutcome, RunStatus, SandboxStatus, Store};
use tokio_util::sync::CancellationToken;
use tokio_util::task::TaskTracker;

use crate::ids::{format_time, now, parse_time};
use crate::logs::RunLogs;
use crate::slots::Slots;
use crate::workspace::Workspaces;
use crate::{Engine, EngineConfig, EngineError};

/// How long shutdown waits for running execs to record their interruption.
const SHUTDOWN_GRACE: Duration = Duration::from_secs(10);

fn private_dir(path: &std::path::Path) -> Result<(), EngineError> {
    std::fs::create_dir_all(path)
        .and_then(|()| std::fs::set_permissions(path, std::fs::Permissions::from_mode(0o700)))
        .map_err(EngineError::io(format!("cannot create {}", path.display())))
}

impl Engine {
    /// Prepares the state directory, opens the registry and recovers from a previous crash:
    /// runs left open become `interrupted`, deleted sandboxes' leftovers are freed.
    pub fn start(
        config: EngineConfig,
        backend: Arc<dyn Backend>,
        egress: Option<petri_egress::EgressProxy>,
        disks: petri_sandbox::DiskQuotas,
    ) -> Result<Arc<Self>, EngineError> {
        // Only the server may read the registry, logs, caches and workspaces.
        for dir in [
            config.root.clone(),
            config.sandboxes_dir(),
            config.logs_dir(),
            config.staging_dir(),
            config.root.join("cache"),
            config.root.join("disks"),
            config.runtime_dir(),
        ] {
            private_dir(&dir)?;
        }
        // Leftovers of uploads interrupted by a crash.
        if let Ok(entries) = std::fs::read_dir(config.staging_dir()) {
            for entry in entries.flatten() {
                let name = entry.file_name().to_string_lossy().into_owned();
                if let Err(e) = crate::workspace::remove_entry(&config.staging_dir(), &name) {
                    tracing::warn!(error = %e, "cannot clean staging leftovers");
                }
            }
        }
        let store = Arc::new(Store::open(&config.db_path())?);
        if config.host_uid_base.is_some() {
            // bubblewrap runs as each sandbox's uid and must reach its workspace: the two
            // directories above it become traverse-only (no listing); everything else in
            // them stays private to the server, and each workspace to its own sandbox.
            for dir in [config.root.clone(), config.sandboxes_dir()] {
                std::fs::set_permissions(&dir, std::fs::Permissions::from_mode(0o711))
                    .map_err(EngineError::io(format!("cannot open up {}", dir.display())))?;
            }
        }
        disks.keep_spares(config.default_limits.disk_bytes);
        let running = tokio::sync::Semaphore::new(config.max_running_execs.max(1));
        let engine = Arc::new(Self {
            workspaces: Workspaces::new(config.sandboxes_dir(), config.staging_dir(), disks),
            logs: Arc::new(RunLogs::new(config.logs_dir(), config.log_max_bytes)),
            config,
            audit: Arc::new(crate::audit::StoreAudit::new(store.clone())),
            store,
            backend,
            egress,
            slots: Slots::default(),
            tasks: TaskTracker::new(),
            shutdown: CancellationToken::new(),
            running,
        });
        engine.recover()?;
        Ok(engine)
    }

    fn recover(&self) -> Result<(), EngineError> {
        let open = self.store.open_run_ids()?;
        let at = now();
        for run_id in &open {
            let started = self
                .store
                .run(run_id)?
                .and_then(|run| parse_time(&run.started_at));
            let duration_ms = started
                .map(|s| (at - s).num_milliseconds().max(0) as u64)
                .unwrap_or(0);
            let outcome = RunOutcome {
                status: RunStatus::Interrupted,
                completed_at: format_time(at),
                duration_ms,
                exit_code: None,
                error: Some("interrupted: the server stopped while the command was running".into()),
                output_bytes: self.logs.size(run_id),
                output_truncated: false,
                test_summary: None,
            };
            self.store.complete_run(run_id, &outcome)?;
        }
        if !open.is_empty() {
            tracing::warn!(
                runs = open.len(),
                "marked runs left open by a previous server as interrupted"
            );
        }
        for id in self.store.deleted_sandbox_ids()? {
            if self.workspaces.exists(&id) {
                self.free(&id);
            }
        }
        for record in self.store.list_live_sandboxes(&format_time(at))? {
            // Whatever a previous server left running (it was killed: its runs are recorded
            // interrupted above) goes now; a process tree's parent-death signal does not
            // always reach every process. The sandbox's cgroups come back at its next exec.
            if let Err(e) = self.backend.destroy(&record.id) {
                tracing::error!(error = %e, sandbox_id = record.id, "cannot kill a previous server's processes");
            }
            if let Err(e) = self.workspaces.remount(&record.id) {
                tracing::error!(error = %e, sandbox_id = record.id, "cannot mount a sandbox's disk");
            }
        }
        self.logs.enforce_retention(&self.store)?;
        Ok(())
    }

    /// Kills whatever runs in a sandbox and frees its disk and kernel resources.
    fn free(&self, id: &str) {
        if let Err(e) = self.backend.destroy(id) {
            tracing::error!(error = %e, sandbox_id = id, "cannot release sandbox cgroups");
        }
        if let Err(e) = self.workspaces.remove(id) {
            tracing::error!(error = %e, sandbox_id = id, "cannot free sandbox workspace");
        }
    }

    /// Soft-deletes with `status`, kills running and queued execs, frees the workspace.
    /// History rows stay. Returns false when the sandbox was already gone.
    async fn retire(
        self: &Arc<Self>,
        id: &str,
        status: SandboxStatus,
    ) -> Result<bool, EngineError> {
        let (lookup, at) = (id.to_string(), format_time(now()));
        let changed = self
            .db(move |store| match status {
                SandboxStatus::Expired => store.expire_sandbox(&lookup, &at),
                _ => store.soft_delete_sandbox(&lookup, status, &at),
            })
            .await?;
        if !changed {
            return Ok(false);
        }
        if let Some(slot) = self.slots.remove(id) {
            slot.doomed.cancel();
            // Let the exec tasks record their `killed` outcome before the disk goes.
            for _ in 0..200 {
                if slot.settled() {
                    break;
                }
                tokio::time::sleep(Duration::from_millis(10)).await;
            }
        }
        let engine = self.clone();
        let id = id.to_string();
        tokio::task::spawn_blocking(move || engine.free(&id))
            .await
            .map_err(|e| EngineError::Task(e.to_string()))?;
        Ok(true)
    }

    /// `DELETE /v1/sandboxes/{id}`: a sandbox is deleted once; afterwards it is not found.
    pub async fn delete_sandbox(self: &Arc<Self>, id: &str) -> Result<(), EngineError> {
        self.live_record(id).await?;
        if self.retire(id, SandboxStatus::Deleted).await? {
            Ok(())
        } else {
            Err(EngineError::SandboxNotFound { id: id.to_string() })
        }
    }

    /// One sweep: expires idle sandboxes. A sandbox with a running or queued exec never
    /// expires; its exec pushes the expiry out again when it ends.
    pub async fn sweep(self: &Arc<Self>) -> Result<usize, EngineError> {
        let at = format_time(now());
        let expired = self.db(move |store| store.expired_sandbox_ids(&at)).await?;
        let mut swept = 0;
        for id in expired {
            if self.slots.is_busy(&id) {
                continue;
            }
            if self.retire(&id, SandboxStatus::Expired).await? {
                tracing::info!(sandbox_id = id, "expired idle sandbox");
                swept += 1;
            }
        }
        Ok(swept)
    }

    /// Starts the periodic sweeper; it stops at shutdown.
    pub fn spawn_sweeper(self: &Arc<Self>) {
        let engine = self.clone();
        self.tasks.spawn(async move {
            let mut tick = tokio::time::interval(engine.config.sweep_interval);
            tick.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
            loop {
                tokio::select! {
                    _ = tick.tick() => {
                        if let Err(e) = engine.sweep().await {
                            tracing::error!(error = %e, "sweep failed");
                        }
                    }
                    () = engine.shutdown.cancelled() => break,
                }
            }
        });
    }

    /// Stops accepting execs, kills running ones (recorded as `interrupted`, their streams
    /// get a `done`), and waits for that bookkeeping to finish.
    pub async fn shutdown(&self) {
        self.shutdown.cancel();
        self.tasks.close();
        if tokio::time::timeout(SHUTDOWN_GRACE, self.tasks.wait())
            .await
            .is_err()
        {
            tracing::warn!("some exec tasks did not finish within the shutdown grace period");
        }
    }
}
