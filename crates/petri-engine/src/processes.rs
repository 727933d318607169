//! Background processes and port preview: what a client can do with a long-running command
//! (a dev server, a worker) besides waiting for it.

use std::sync::Arc;
use std::time::Duration;

use petri_store::{RunRecord, RunStatus};
use serde::Serialize;

use crate::exec::{
    BackgroundHandle, Control, DoneInfo, ExecEvent, ExecJob, ExecRequest, ExecStream, SIGKILL,
    parse_signal, run_exec, signal_names, tail_log,
};
use crate::ids::{format_time, is_run_id, now};
use crate::{Engine, EngineError, invalid};

/// How long a kill waits for the process to be gone before answering.
const KILL_WAIT: Duration = Duration::from_secs(10);
/// How long a signal request waits for the process to take it.
const SIGNAL_WAIT: Duration = Duration::from_secs(5);
/// How long a port preview waits for the sandboxed server to accept a connection.
const CONNECT_TIMEOUT: Duration = Duration::from_secs(10);

/// A background process as clients see it. Its id is its run's id: history, output and
/// SBOM are found under `/v1/runs/{id}` like any run's.
#[derive(Debug, Clone, Serialize)]
pub struct ProcessView {
    pub id: String,
    pub run_id: String,
    pub sandbox_id: String,
    pub command: String,
    /// `running`, then how it ended (`succeeded`, `failed`, `killed`, `timed_out`,
    /// `interrupted`).
    pub status: RunStatus,
    pub running: bool,
    pub exit_code: Option<i32>,
    pub error: Option<String>,
    pub started_at: String,
    pub completed_at: Option<String>,
    pub duration_ms: Option<u64>,
    pub output_bytes: u64,
    pub output_truncated: bool,
}

impl From<RunRecord> for ProcessView {
    fn from(run: RunRecord) -> Self {
        Self {
            id: run.id.clone(),
            running: run.status == RunStatus::Running,
            run_id: run.id,
            sandbox_id: run.sandbox_id,
            command: run.command,
            status: run.status,
            exit_code: run.exit_code,
            error: run.error,
            started_at: run.started_at,
            completed_at: run.completed_at,
            duration_ms: run.duration_ms,
            output_bytes: run.output_bytes,
            output_truncated: run.output_truncated,
        }
    }
}

impl Engine {
    /// Starts `request` detached and answers at once with its id. Dependencies are installed
    /// first, as for any exec; its output goes to its run's log.
    pub async fn start_background(
        self: &Arc<Self>,
        id: &str,
        request: ExecRequest,
    ) -> Result<ProcessView, EngineError> {
        if request.test.is_some() {
            return Err(invalid(
                "background",
                "cannot be combined with test mode (test mode starts and stops its own server)",
            ));
        }
        let timeout = self.validate_exec(&request, None)?;
        let sandbox = self.live_record(id).await?;
        let slot = self.slots.get_or_create(id);
        let (handle, orders) = BackgroundHandle::new();
        let run_id = crate::ids::new_run_id();
        {
            let mut running = slot.background_processes();
            if running.len() >= self.config.background_max {
                return Err(EngineError::TooManyProcesses {
                    id: id.to_string(),
                    max: self.config.background_max,
                });
            }
            running.insert(run_id.clone(), handle.clone());
        }
        // The events of a background process go nowhere: its output is read from its log.
        let (events, _) = tokio::sync::mpsc::unbounded_channel();
        let job = ExecJob {
            run_id: run_id.clone(),
            sandbox,
            command: request.command,
            test: None,
            timeout,
            slot: slot.clone(),
            events,
            background: Some(handle),
        };
        let run = crate::exec::new_run(&job, &format_time(now()));
        if let Err(e) = self.db(move |store| store.insert_run(&run)).await {
            slot.background_processes().remove(&run_id);
            return Err(e);
        }
        self.tasks.spawn(run_exec(self.clone(), job, Some(orders)));
        self.process(id, &run_id).await
    }

    /// The sandbox's background processes (running and ended), newest first.
    pub async fn processes(&self, id: &str) -> Result<Vec<ProcessView>, EngineError> {
        self.record(id).await?;
        let lookup = id.to_string();
        let runs = self
            .db(move |store| store.list_background_runs(&lookup))
            .await?;
        Ok(runs
            .into_iter()
            .map(|run| self.live_view(id, run))
            .collect())
    }

    /// One background process of the sandbox.
    pub async fn process(&self, id: &str, process_id: &str) -> Result<ProcessView, EngineError> {
        let run = self.background_run(id, process_id).await?;
        Ok(self.live_view(id, run))
    }

    /// The record of a process, with its output so far while it runs (the record has the
    /// total only once it ends).
    fn live_view(&self, id: &str, run: RunRecord) -> ProcessView {
        let mut view = ProcessView::from(run);
        if view.running
            && let Some(handle) = self.handle_of(id, &view.id)
        {
            view.output_bytes = handle.progress.borrow().logged;
        }
        view
    }

    async fn background_run(&self, id: &str, process_id: &str) -> Result<RunRecord, EngineError> {
        self.record(id).await?;
        let missing = || EngineError::ProcessNotFound {
            id: process_id.to_string(),
        };
        if !is_run_id(process_id) {
            return Err(missing());
        }
        let lookup = process_id.to_string();
        let run = self.db(move |store| store.run(&lookup)).await?;
        run.filter(|run| run.sandbox_id == id && run.background)
            .ok_or_else(missing)
    }

    /// The process's output from its start, then live until it ends, then one `done`.
    pub async fn follow_process(
        self: &Arc<Self>,
        id: &str,
        process_id: &str,
    ) -> Result<ExecStream, EngineError> {
        let run = self.background_run(id, process_id).await?;
        if run.output_evicted {
            return Err(EngineError::OutputEvicted { id: run.id });
        }
        let progress = self
            .handle_of(id, &run.id)
            .map(|handle| handle.progress.subscribe());
        let (events, stream) = tokio::sync::mpsc::unbounded_channel();
        let engine = self.clone();
        let log = self.logs.path(&run.id);
        self.tasks.spawn(async move {
            tail_log(log, progress, &events).await;
            if events.is_closed() {
                return;
            }
            let done = match engine.run(&run.id).await {
                Ok(run) => done_of(run),
                Err(e) => DoneInfo::failed(
                    run.id,
                    crate::exec::EXIT_KILLED,
                    RunStatus::Failed,
                    format!("cannot read the process's record: {e}"),
                ),
            };
            let _ = events.send(ExecEvent::Done(Box::new(done)));
        });
        Ok(stream)
    }

    /// Sends a signal (`TERM`, `SIGINT`, `9`...) to the process's command and what it
    /// started. `KILL` takes the whole process tree down and waits until it is gone.
    pub async fn signal_process(
        &self,
        id: &str,
        process_id: &str,
        signal: &str,
    ) -> Result<ProcessView, EngineError> {
        let number = parse_signal(signal).ok_or_else(|| {
            invalid(
                "signal",
                format!("unknown signal {signal:?}; use one of {}", signal_names()),
            )
        })?;
        if number == SIGKILL {
            return self.kill_process(id, process_id).await;
        }
        let handle = self.live_handle(id, process_id).await?;
        let (reply, answer) = tokio::sync::oneshot::channel();
        let ended = || EngineError::ProcessEnded {
            id: process_id.to_string(),
        };
        handle
            .control
            .send(Control::Signal {
                signal: number,
                reply,
            })
            .map_err(|_| ended())?;
        // Orders are taken once the command runs: a process still installing its dependencies
        // answers after the install, so do not hold the request for it.
        match tokio::time::timeout(SIGNAL_WAIT, answer).await {
            Ok(Ok(Ok(()))) => {}
            Ok(Ok(Err(reason))) => {
                tracing::warn!(process_id, reason, "signal not delivered");
                return Err(ended());
            }
            Ok(Err(_)) => return Err(ended()),
            Err(_) => {
                return Err(EngineError::ProcessStarting {
                    id: process_id.to_string(),
                });
            }
        }
        self.process(id, process_id).await
    }

    /// Kills the process's whole tree and answers once its run is recorded as killed.
    pub async fn kill_process(
        &self,
        id: &str,
        process_id: &str,
    ) -> Result<ProcessView, EngineError> {
        let handle = self.live_handle(id, process_id).await?;
        let mut progress = handle.progress.subscribe();
        let _ = handle.control.send(Control::Kill);
        let _ = tokio::time::timeout(KILL_WAIT, progress.wait_for(|p| p.finished)).await;
        self.process(id, process_id).await
    }

    async fn live_handle(
        &self,
        id: &str,
        process_id: &str,
    ) -> Result<Arc<BackgroundHandle>, EngineError> {
        let run = self.background_run(id, process_id).await?;
        self.handle_of(id, &run.id)
            .ok_or(EngineError::ProcessEnded { id: run.id })
    }

    /// The live side of a background process, while it runs.
    fn handle_of(&self, id: &str, run_id: &str) -> Option<Arc<BackgroundHandle>> {
        let slot = self.slots.get(id)?;
        slot.background_processes().get(run_id).cloned()
    }

    /// A connection to `port` on the sandbox's loopback, made inside its network: the port
    /// preview. Nothing else is reachable this way.
    pub async fn connect_port(
        &self,
        id: &str,
        port: u16,
    ) -> Result<tokio::net::TcpStream, EngineError> {
        let record = self.live_record(id).await?;
        if port == 0 {
            return Err(invalid("port", "must be between 1 and 65535"));
        }
        let closed = || EngineError::PortClosed {
            id: id.to_string(),
            port,
        };
        let spec = self.sandbox_spec(&record);
        let backend = self.backend.clone();
        let stream = tokio::task::spawn_blocking(move || backend.connect(&spec, port))
            .await
            .map_err(|e| EngineError::Task(e.to_string()))?
            .map_err(|e| match e {
                petri_sandbox::SandboxError::PortClosed { .. } => closed(),
                other => EngineError::Sandbox(other),
            })?;
        let stream = tokio::net::TcpStream::from_std(stream)
            .map_err(EngineError::io("cannot adopt the preview connection"))?;
        // The connect may still be in flight (a busy listener): wait for it, boundedly.
        match tokio::time::timeout(CONNECT_TIMEOUT, stream.writable()).await {
            Ok(Ok(())) => {}
            _ => return Err(closed()),
        }
        match stream.take_error() {
            Ok(None) => Ok(stream),
            _ => Err(closed()),
        }
    }
}

/// The `done` that ends a followed process's stream, from its completed record.
fn done_of(run: RunRecord) -> DoneInfo {
    DoneInfo {
        exit_code: run.exit_code.unwrap_or(crate::exec::EXIT_KILLED),
        duration_ms: run.duration_ms.unwrap_or(0),
        // The output was streamed line by line; repeating it here would double a long log.
        output: String::new(),
        timed_out: run.status == RunStatus::TimedOut,
        truncated: run.output_truncated,
        oom_killed: run
            .error
            .as_deref()
            .is_some_and(|e| e.starts_with("out of memory")),
        error: run.error,
        run_id: run.id,
        status: run.status,
        install: None,
        test: None,
    }
}
