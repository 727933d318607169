//! Runs one exec to completion: waits its turn, records the run before anything starts,
//! installs dependencies when they changed, runs the command, and always finishes with
//! exactly one `done` event and a completed run row, whatever the client does.

use std::sync::Arc;
use std::time::Duration;

use petri_sandbox::{EXIT_SETUP_FAILED, ExecSpec, Network, TestSetup};
use petri_store::{NewRun, RunOutcome, RunStatus, SandboxRecord};
use tokio::sync::mpsc::{UnboundedReceiver, UnboundedSender};

use super::background::{BackgroundHandle, Control};
use super::install::{InstallStep, InstallSummary, prepare};
use super::supervise::{
    Collected, EXIT_KILLED, EXIT_NOT_STARTED, Stop, Supervised, Watch, supervise,
};
use super::{DoneInfo, ExecEvent};
use crate::Engine;
use crate::ids::{format_time, now};
use crate::slots::{CountGuard, Slot};

/// Seconds a server under test gets to become ready, unless the request says otherwise. A
/// first `go run` or `mvn exec:java` compiles before it listens: Go's standard library alone
/// took over a minute on a sandbox's one CPU while other builds shared the machine (the
/// readiness wait ends as soon as the server answers, so only real failures wait this long).
const DEFAULT_READY_TIMEOUT: u64 = 180;

/// Everything one exec task needs.
#[derive(Debug)]
pub(crate) struct ExecJob {
    pub run_id: String,
    pub sandbox: SandboxRecord,
    pub command: String,
    pub test: Option<super::TestRequest>,
    /// `None`: no limit (background processes live as long as their sandbox).
    pub timeout: Option<Duration>,
    pub slot: Arc<Slot>,
    pub events: UnboundedSender<ExecEvent>,
    /// Set for a background process: its run is recorded before the task starts, it gives
    /// the sandbox's turn back once dependencies are installed, and it takes orders.
    pub background: Option<Arc<BackgroundHandle>>,
}

/// The sandbox's turn (and a server-wide running permit) held by an exec.
type Turn<'a> = (
    tokio::sync::MutexGuard<'a, ()>,
    Result<tokio::sync::SemaphorePermit<'a>, tokio::sync::AcquireError>,
    CountGuard<'a>,
);

impl Stop {
    fn status(self) -> RunStatus {
        match self {
            Stop::TimedOut => RunStatus::TimedOut,
            Stop::SandboxGone => RunStatus::Killed,
            Stop::Shutdown => RunStatus::Interrupted,
            Stop::Killed => RunStatus::Killed,
        }
    }
}

pub(crate) async fn run_exec(
    engine: Arc<Engine>,
    job: ExecJob,
    mut control: Option<UnboundedReceiver<Control>>,
) {
    let slot = job.slot.clone();
    let waiting = CountGuard::enter(&slot.waiting);
    // First this sandbox's turn, then a server-wide running permit; both waits stream
    // keepalives and give way to deletion and shutdown.
    let turn = async {
        let guard = slot.queue.lock().await;
        let permit = engine.running.acquire().await;
        (guard, permit, CountGuard::enter(&slot.running))
    };
    let turn = tokio::select! {
        turn = turn => Ok(turn),
        () = slot.doomed.cancelled() => Err(Stop::SandboxGone),
        () = engine.shutdown.cancelled() => Err(Stop::Shutdown),
    };
    drop(waiting);
    let done = match turn {
        Ok(turn) if !slot.doomed.is_cancelled() => {
            execute(&engine, &job, turn, control.as_mut()).await
        }
        Ok(_turn) => record_unstarted(&engine, &job, Stop::SandboxGone).await,
        Err(stop) => record_unstarted(&engine, &job, stop).await,
    };
    let _ = job.events.send(ExecEvent::Done(Box::new(done)));
    if let Some(handle) = &job.background {
        handle.finish(&slot, &job.run_id);
    }
}

pub(crate) fn new_run(job: &ExecJob, at: &str) -> NewRun {
    NewRun {
        id: job.run_id.clone(),
        sandbox_id: job.sandbox.id.clone(),
        command: job.command.clone(),
        started_at: at.to_string(),
        timeout_seconds: job.timeout.map_or(0, |t| t.as_secs()),
        background: job.background.is_some(),
    }
}

/// Records a run that never got to start (its sandbox went away or the server stopped while
/// it was queued), so even that exec leaves history.
async fn record_unstarted(engine: &Engine, job: &ExecJob, stop: Stop) -> DoneInfo {
    let error = match stop {
        Stop::SandboxGone => "killed: the sandbox was deleted before the command started",
        _ => "interrupted: the server shut down before the command started",
    };
    let run_id = job.run_id.clone();
    let at = format_time(now());
    // A background process's run was recorded when it was asked for.
    let run = job.background.is_none().then(|| new_run(job, &at));
    let outcome = RunOutcome {
        status: stop.status(),
        completed_at: at,
        duration_ms: 0,
        exit_code: Some(EXIT_KILLED),
        error: Some(error.to_string()),
        output_bytes: 0,
        output_truncated: false,
        test_summary: None,
    };
    let id = run_id.clone();
    let recorded = engine
        .db(move |store| {
            if let Some(run) = run {
                store.insert_run(&run)?;
            }
            store.complete_run(&id, &outcome)
        })
        .await;
    if let Err(e) = recorded {
        tracing::error!(error = %e, "cannot record a run that did not start");
    }
    DoneInfo::failed(run_id, EXIT_KILLED, stop.status(), error.to_string())
}

async fn execute(
    engine: &Arc<Engine>,
    job: &ExecJob,
    turn: Turn<'_>,
    control: Option<&mut UnboundedReceiver<Control>>,
) -> DoneInfo {
    let sandbox_id = job.sandbox.id.clone();
    let run_id = job.run_id.clone();
    let started = now();
    let run = job
        .background
        .is_none()
        .then(|| new_run(job, &format_time(started)));
    let ttl = engine.ttl_from(started);
    let (touch_id, touch_now) = (sandbox_id.clone(), format_time(started));
    let recorded = engine
        .db(move |store| {
            if let Some(run) = run {
                store.insert_run(&run)?;
            }
            store.touch_sandbox(&touch_id, &touch_now, &ttl, true)
        })
        .await;
    if let Err(e) = recorded {
        tracing::error!(error = %e, sandbox_id, "cannot record run start");
        let error = "internal error: the run could not be recorded".to_string();
        return DoneInfo::failed(run_id, EXIT_NOT_STARTED, RunStatus::Failed, error);
    }

    let install = match prepare(engine, job, &run_id).await {
        InstallStep::NotNeeded => None,
        InstallStep::Ready(summary) => Some(summary),
        InstallStep::Failed {
            summary,
            outcome,
            error,
        } => {
            let status = outcome.stop.map_or(RunStatus::Failed, Stop::status);
            let empty = Collected::program(0, None, job.events.clone());
            return complete(
                engine,
                job,
                run_id,
                &outcome,
                status,
                Some(error),
                empty,
                Some(summary),
                None,
            )
            .await;
        }
    };

    if job.background.is_some() {
        // Dependencies are in place: a background process must not hold the sandbox's
        // turn (later execs would wait for it forever) nor a running permit.
        drop(turn);
    }
    let spec = engine.sandbox_spec(&job.sandbox);
    let workspace = engine.workspaces.path(&job.sandbox.id);
    let (command, test) = match &job.test {
        None => (job.command.clone(), None),
        Some(test) => {
            let runner = test
                .test_command
                .clone()
                .or_else(|| petri_deps::default_test_command(&job.sandbox.language, &workspace));
            let Some(runner) = runner else {
                let error = format!(
                    "test mode: no test runner known for this {} project; pass test_command",
                    job.sandbox.language
                );
                let outcome = Supervised::not_started(&error);
                let empty = Collected::program(0, None, job.events.clone());
                return complete(
                    engine,
                    job,
                    run_id,
                    &outcome,
                    RunStatus::Failed,
                    Some(error),
                    empty,
                    install,
                    None,
                )
                .await;
            };
            let setup = TestSetup {
                serve: job.command.clone(),
                ready_port: test.ready_port,
                ready_path: test.ready_path.clone(),
                ready_timeout_seconds: test.ready_timeout_seconds.unwrap_or(DEFAULT_READY_TIMEOUT),
            };
            (runner, Some(setup))
        }
    };
    let exec = ExecSpec {
        command,
        env: petri_deps::runtime_env(&job.sandbox.language, &workspace),
        // User code never gets a network.
        network: Network::None,
        test,
    };
    let log = engine.logs.create(&run_id).ok();
    let mut collected = Collected::program(engine.config.output_max_bytes, log, job.events.clone())
        .with_progress(job.background.as_ref().map(|h| h.progress.clone()));
    let mut server = job.test.as_ref().map(|_| {
        let log = engine.logs.create_server(&run_id).ok();
        Collected::server(log, job.events.clone())
    });
    let spawning = std::time::Instant::now();
    let outcome = match engine.backend.spawn(&spec, &exec) {
        Ok(process) => {
            // Spawn cost is dominated by cgroup migration on v1 hosts; worth seeing in logs.
            tracing::debug!(
                spawn_us = spawning.elapsed().as_micros() as u64,
                sandbox_id,
                "exec started"
            );
            let watch = Watch {
                timeout: job.timeout,
                renew_ttl: job.background.is_none(),
                control,
            };
            supervise(
                engine,
                &job.slot,
                &sandbox_id,
                process,
                &mut collected,
                server.as_mut(),
                watch,
            )
            .await
        }
        Err(e) => {
            tracing::error!(error = %e, sandbox_id, "sandbox failed to start");
            // The cause names host paths; it goes to the server log, not to clients.
            Supervised::not_started("sandbox failed to start (the server log has the cause)")
        }
    };
    let (status, error) = describe(engine, job, &outcome, collected.last_line.as_deref());
    let test = job.test.as_ref().and_then(|_| {
        // A setup failure tested nothing: no verdict to read.
        (outcome.start_error.is_none() && outcome.exit_code != i32::from(EXIT_SETUP_FAILED))
            .then(|| super::tests_summary::parse(&collected.text))
    });
    complete(
        engine, job, run_id, &outcome, status, error, collected, install, test,
    )
    .await
}

/// Records the end of a run (and activity on its sandbox) and builds its `done`.
#[allow(clippy::too_many_arguments)]
async fn complete(
    engine: &Engine,
    job: &ExecJob,
    run_id: String,
    outcome: &Supervised,
    status: RunStatus,
    error: Option<String>,
    mut collected: Collected,
    install: Option<InstallSummary>,
    test: Option<super::TestSummary>,
) -> DoneInfo {
    let finished = now();
    let done = DoneInfo {
        exit_code: outcome.reported_exit_code(),
        duration_ms: u64::try_from(outcome.duration.as_millis()).unwrap_or(u64::MAX),
        output: std::mem::take(&mut collected.text),
        error: error.clone(),
        run_id: run_id.clone(),
        status,
        timed_out: outcome.stop == Some(Stop::TimedOut),
        truncated: collected.truncated,
        oom_killed: outcome.oom_killed,
        install,
        test,
    };
    let run_outcome = RunOutcome {
        status,
        completed_at: format_time(finished),
        duration_ms: done.duration_ms,
        exit_code: Some(done.exit_code),
        error,
        output_bytes: collected.bytes,
        output_truncated: collected.truncated,
        test_summary: done
            .test
            .as_ref()
            .and_then(|t| serde_json::to_string(t).ok()),
    };
    let ttl = engine.ttl_from(finished);
    let (sandbox_id, finished_at, id) = (
        job.sandbox.id.clone(),
        format_time(finished),
        run_id.clone(),
    );
    let result = engine
        .db(move |store| {
            store.complete_run(&id, &run_outcome)?;
            store.touch_sandbox(&sandbox_id, &finished_at, &ttl, true)
        })
        .await;
    if let Err(e) = result {
        tracing::error!(error = %e, run_id, "cannot record run completion");
    }
    engine.schedule_retention();
    done
}

/// Final status and error line of a run.
fn describe(
    engine: &Engine,
    job: &ExecJob,
    outcome: &Supervised,
    last_line: Option<&str>,
) -> (RunStatus, Option<String>) {
    if let Some(error) = &outcome.start_error {
        return (RunStatus::Failed, Some(error.clone()));
    }
    match outcome.stop {
        Some(Stop::TimedOut) => {
            let secs = job.timeout.map_or(0, |t| t.as_secs());
            let error = format!("timed out after {secs} seconds");
            return (RunStatus::TimedOut, Some(error));
        }
        Some(stop @ Stop::Killed) => {
            return (
                stop.status(),
                Some("killed: stopped through the API".into()),
            );
        }
        Some(stop @ Stop::SandboxGone) => {
            return (
                stop.status(),
                Some("killed: the sandbox was deleted".into()),
            );
        }
        Some(stop @ Stop::Shutdown) => {
            return (
                stop.status(),
                Some("interrupted: the server is shutting down".into()),
            );
        }
        None => {}
    }
    if outcome.oom_killed {
        let mib = engine.limits_of(&job.sandbox).memory_bytes >> 20;
        return (
            RunStatus::Failed,
            Some(format!(
                "out of memory: the sandbox's memory limit of {mib} MiB was exceeded and the kernel killed the process"
            )),
        );
    }
    if outcome.exit_code == 0 {
        return (RunStatus::Succeeded, None);
    }
    if job.test.is_some() && outcome.exit_code == i32::from(EXIT_SETUP_FAILED) {
        let reason = last_line.unwrap_or("the server could not be started");
        return (
            RunStatus::Failed,
            Some(format!("test setup failed: {reason}")),
        );
    }
    let error = match (last_line, outcome.signal) {
        // A background process usually ends because someone signalled it: say so rather
        // than quote whatever it last logged.
        (_, Some(signal)) if job.background.is_some() => format!("terminated by signal {signal}"),
        (Some(line), _) => line.to_string(),
        (None, Some(signal)) => format!("killed by signal {signal}"),
        (None, None) => format!("exited with code {}", outcome.exit_code),
    };
    (RunStatus::Failed, Some(error))
}
