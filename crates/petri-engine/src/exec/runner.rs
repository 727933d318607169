//! Runs one exec to completion: waits its turn, records the run before the command starts,
//! streams and stores output under the cap, enforces the timeout, and always finishes with
//! exactly one `done` event and a completed run row, whatever the client does.

use std::io::Write;
use std::sync::Arc;
use std::time::Duration;

use petri_sandbox::{ExecSpec, Process, SandboxSpec};
use petri_store::{NewRun, RunOutcome, RunStatus, SandboxRecord};
use tokio::io::AsyncReadExt;
use tokio::sync::mpsc::UnboundedSender;
use tokio::time::Instant;

use super::lines::LineSplitter;
use super::{DoneInfo, ExecEvent};
use crate::Engine;
use crate::ids::{format_time, new_run_id, now};
use crate::slots::{CountGuard, Slot};

/// Longest line sent as one event; longer ones are cut.
const MAX_LINE_BYTES: usize = 64 * 1024;
/// How long output may keep flowing after the command exited or was killed.
const DRAIN_GRACE: Duration = Duration::from_secs(2);
const EXIT_TIMED_OUT: i32 = 124;
const EXIT_KILLED: i32 = 137;
const EXIT_NOT_STARTED: i32 = 126;

/// Everything one exec task needs.
#[derive(Debug)]
pub(crate) struct ExecJob {
    pub sandbox: SandboxRecord,
    pub command: String,
    pub timeout: Duration,
    pub slot: Arc<Slot>,
    pub events: UnboundedSender<ExecEvent>,
}

/// Why the server stopped a command.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Stop {
    TimedOut,
    SandboxGone,
    Shutdown,
}

impl Stop {
    fn status(self) -> RunStatus {
        match self {
            Stop::TimedOut => RunStatus::TimedOut,
            Stop::SandboxGone => RunStatus::Killed,
            Stop::Shutdown => RunStatus::Interrupted,
        }
    }
}

/// Output collected so far, capped.
struct Collected {
    text: String,
    bytes: u64,
    cap: u64,
    truncated: bool,
    last_line: Option<String>,
    log: Option<std::io::BufWriter<std::fs::File>>,
    events: UnboundedSender<ExecEvent>,
}

impl Collected {
    /// Pushes what was logged so far to disk, so a crash or a reader mid-run sees it.
    fn flush(&mut self) {
        if let Some(log) = &mut self.log
            && log.flush().is_err()
        {
            self.log = None;
        }
    }

    fn line(&mut self, line: String) {
        if !line.trim().is_empty() {
            self.last_line = Some(line.trim().to_string());
        }
        if self.truncated {
            return;
        }
        let len = line.len() as u64;
        if self.bytes + len > self.cap {
            self.truncated = true;
            return;
        }
        self.bytes += len;
        if let Some(log) = &mut self.log
            && log.write_all(line.as_bytes()).is_err()
        {
            self.log = None;
        }
        self.text.push_str(&line);
        // A closed receiver means the client left; the command carries on regardless.
        let _ = self.events.send(ExecEvent::Output(line));
    }
}

pub(crate) async fn run_exec(engine: Arc<Engine>, job: ExecJob) {
    let slot = job.slot.clone();
    let waiting = CountGuard::enter(&slot.waiting);
    // First this sandbox's turn, then a server-wide running permit; both waits stream
    // keepalives and give way to deletion and shutdown.
    let turn = async {
        let guard = slot.queue.lock().await;
        let permit = engine.running.acquire().await;
        (guard, permit)
    };
    let turn = tokio::select! {
        turn = turn => Ok(turn),
        () = slot.doomed.cancelled() => Err(Stop::SandboxGone),
        () = engine.shutdown.cancelled() => Err(Stop::Shutdown),
    };
    drop(waiting);
    let _running = CountGuard::enter(&slot.running);
    let events = job.events.clone();
    let done = match turn {
        Ok(_turn) => execute(&engine, &job).await,
        Err(stop) => record_unstarted(&engine, &job, stop).await,
    };
    let _ = events.send(ExecEvent::Done(Box::new(done)));
}

/// Records a run that never got to start (its sandbox went away or the server stopped while
/// it was queued), so even that exec leaves history.
async fn record_unstarted(engine: &Engine, job: &ExecJob, stop: Stop) -> DoneInfo {
    let error = match stop {
        Stop::SandboxGone => "killed: the sandbox was deleted before the command started",
        _ => "interrupted: the server shut down before the command started",
    };
    finish_failed_start(engine, job, stop.status(), EXIT_KILLED, error.to_string()).await
}

async fn finish_failed_start(
    engine: &Engine,
    job: &ExecJob,
    status: RunStatus,
    exit_code: i32,
    error: String,
) -> DoneInfo {
    let run_id = new_run_id();
    let at = format_time(now());
    let sandbox_id = job.sandbox.id.clone();
    let new_run = NewRun {
        id: run_id.clone(),
        sandbox_id,
        command: job.command.clone(),
        started_at: at.clone(),
        timeout_seconds: job.timeout.as_secs(),
    };
    let outcome = RunOutcome {
        status,
        completed_at: at,
        duration_ms: 0,
        exit_code: Some(exit_code),
        error: Some(error.clone()),
        output_bytes: 0,
        output_truncated: false,
    };
    let id = run_id.clone();
    if let Err(e) = engine
        .db(move |store| {
            store.insert_run(&new_run)?;
            store.complete_run(&id, &outcome)
        })
        .await
    {
        tracing::error!(error = %e, "cannot record a run that did not start");
    }
    DoneInfo {
        exit_code,
        duration_ms: 0,
        output: String::new(),
        error: Some(error),
        run_id,
        status,
        timed_out: false,
        truncated: false,
        oom_killed: false,
    }
}

async fn execute(engine: &Arc<Engine>, job: &ExecJob) -> DoneInfo {
    let sandbox_id = job.sandbox.id.clone();
    if job.slot.doomed.is_cancelled() {
        return record_unstarted(engine, job, Stop::SandboxGone).await;
    }
    let run_id = new_run_id();
    let started = now();
    let new_run = NewRun {
        id: run_id.clone(),
        sandbox_id: sandbox_id.clone(),
        command: job.command.clone(),
        started_at: format_time(started),
        timeout_seconds: job.timeout.as_secs(),
    };
    let ttl = engine.ttl_from(started);
    let (touch_id, touch_now) = (sandbox_id.clone(), format_time(started));
    let recorded = engine
        .db(move |store| {
            store.insert_run(&new_run)?;
            store.touch_sandbox(&touch_id, &touch_now, &ttl, true)
        })
        .await;
    if let Err(e) = recorded {
        tracing::error!(error = %e, sandbox_id, "cannot record run start");
        return DoneInfo {
            exit_code: EXIT_NOT_STARTED,
            duration_ms: 0,
            output: String::new(),
            error: Some("internal error: the run could not be recorded".into()),
            run_id,
            status: RunStatus::Failed,
            timed_out: false,
            truncated: false,
            oom_killed: false,
        };
    }

    let spec = SandboxSpec {
        id: sandbox_id.clone(),
        workspace: engine.workspaces.path(&sandbox_id),
        limits: engine.limits_of(&job.sandbox),
    };
    let exec = ExecSpec {
        command: job.command.clone(),
        env: Vec::new(),
        // User code never gets a network; only dependency installs will.
        network: petri_sandbox::Network::None,
    };
    let mut collected = Collected {
        text: String::new(),
        bytes: 0,
        cap: engine.config.output_max_bytes,
        truncated: false,
        last_line: None,
        log: engine
            .logs
            .create(&run_id)
            .ok()
            .map(std::io::BufWriter::new),
        events: job.events.clone(),
    };
    let spawning = std::time::Instant::now();
    let outcome = match engine.backend.spawn(&spec, &exec) {
        Ok(process) => {
            // Spawn cost is dominated by cgroup migration on v1 hosts; worth seeing in logs.
            tracing::debug!(
                spawn_us = spawning.elapsed().as_micros() as u64,
                sandbox_id,
                "exec started"
            );
            supervise(engine, job, process, &mut collected).await
        }
        Err(e) => {
            tracing::error!(error = %e, sandbox_id, "sandbox failed to start");
            Supervised {
                exit_code: EXIT_NOT_STARTED,
                signal: None,
                oom_killed: false,
                stop: None,
                duration: Duration::ZERO,
                // The cause names host paths; it goes to the server log, not to clients.
                start_error: Some("sandbox failed to start (the server log has the cause)".into()),
            }
        }
    };
    if let Some(mut log) = collected.log.take() {
        let _ = log.flush();
    }
    let (status, error) = describe(engine, job, &outcome, collected.last_line.as_deref());
    let finished = now();
    let exit_code = match outcome.stop {
        Some(Stop::TimedOut) => EXIT_TIMED_OUT,
        Some(_) => EXIT_KILLED,
        None => outcome.exit_code,
    };
    let done = DoneInfo {
        exit_code,
        duration_ms: u64::try_from(outcome.duration.as_millis()).unwrap_or(u64::MAX),
        output: std::mem::take(&mut collected.text),
        error: error.clone(),
        run_id: run_id.clone(),
        status,
        timed_out: outcome.stop == Some(Stop::TimedOut),
        truncated: collected.truncated,
        oom_killed: outcome.oom_killed,
    };
    let run_outcome = RunOutcome {
        status,
        completed_at: format_time(finished),
        duration_ms: done.duration_ms,
        exit_code: Some(done.exit_code),
        error,
        output_bytes: collected.bytes,
        output_truncated: collected.truncated,
    };
    let ttl = engine.ttl_from(finished);
    let finished_at = format_time(finished);
    let id = run_id.clone();
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

/// What supervision of a process observed.
struct Supervised {
    exit_code: i32,
    signal: Option<i32>,
    oom_killed: bool,
    stop: Option<Stop>,
    duration: Duration,
    start_error: Option<String>,
}

async fn supervise(
    engine: &Engine,
    job: &ExecJob,
    mut process: Process,
    collected: &mut Collected,
) -> Supervised {
    let started = std::time::Instant::now();
    let mut output = process.take_output();
    let mut splitter = LineSplitter::new(MAX_LINE_BYTES);
    let mut buffer = vec![0u8; 64 * 1024];
    let deadline = Instant::now() + job.timeout;
    let mut drain_until: Option<Instant> = None;
    // A running exec is activity: keep the sandbox's expiry ahead of now while it runs.
    let mut heartbeat =
        tokio::time::interval_at(Instant::now() + engine.heartbeat(), engine.heartbeat());
    let mut stop: Option<Stop> = None;
    let mut exit = None;
    loop {
        let eof = output.is_none();
        if eof && exit.is_some() {
            break;
        }
        let drain_deadline = drain_until.unwrap_or(deadline);
        tokio::select! {
            () = tokio::time::sleep_until(deadline), if stop.is_none() && exit.is_none() => {
                stop = Some(Stop::TimedOut);
            }
            () = job.slot.doomed.cancelled(), if stop.is_none() && exit.is_none() => {
                stop = Some(Stop::SandboxGone);
            }
            () = engine.shutdown.cancelled(), if stop.is_none() && exit.is_none() => {
                stop = Some(Stop::Shutdown);
            }
            _ = heartbeat.tick(), if exit.is_none() => {
                engine.record_activity(&job.sandbox.id).await;
            }
            () = tokio::time::sleep_until(drain_deadline), if drain_until.is_some() && !eof => {
                // Something still holds the pipe after the command ended: stop reading.
                output = None;
                process.kill();
            }
            read = read_some(output.as_mut(), &mut buffer), if !eof => match read {
                Ok(0) | Err(_) => {
                    tracing::debug!(elapsed_us = started.elapsed().as_micros() as u64, "output closed");
                    output = None;
                }
                Ok(n) => {
                    for line in splitter.push(&buffer[..n]) {
                        collected.line(line);
                    }
                    collected.flush();
                }
            },
            status = process.wait(), if exit.is_none() => {
                tracing::debug!(elapsed_us = started.elapsed().as_micros() as u64, "process exited");
                exit = Some(status);
                drain_until.get_or_insert(Instant::now() + DRAIN_GRACE);
            }
        }
        if stop.is_some() && drain_until.is_none() {
            process.kill();
            drain_until = Some(Instant::now() + DRAIN_GRACE);
        }
    }
    if let Some(rest) = splitter.finish() {
        collected.line(rest);
    }
    match exit {
        Some(Ok(info)) => Supervised {
            exit_code: info.code,
            signal: info.signal,
            oom_killed: info.oom_killed,
            stop,
            duration: info.duration,
            start_error: None,
        },
        _ => Supervised {
            exit_code: EXIT_KILLED,
            signal: None,
            oom_killed: false,
            stop,
            duration: Duration::ZERO,
            start_error: Some("lost track of the sandbox process".into()),
        },
    }
}

async fn read_some(
    output: Option<&mut petri_sandbox::Output>,
    buffer: &mut [u8],
) -> std::io::Result<usize> {
    match output {
        Some(output) => output.read(buffer).await,
        None => std::future::pending().await,
    }
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
            return (
                RunStatus::TimedOut,
                Some(format!("timed out after {} seconds", job.timeout.as_secs())),
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
    let error = match (last_line, outcome.signal) {
        (Some(line), _) => line.to_string(),
        (None, Some(signal)) => format!("killed by signal {signal}"),
        (None, None) => format!("exited with code {}", outcome.exit_code),
    };
    (RunStatus::Failed, Some(error))
}
