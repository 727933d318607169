//! Exec: the event stream a client sees, and the task that runs one command.

mod lines;
mod runner;

use petri_store::RunStatus;
use serde::Serialize;

pub(crate) use runner::{ExecJob, run_exec};

/// One event of an exec stream. Every stream ends with exactly one [`ExecEvent::Done`].
#[derive(Debug, Clone)]
pub enum ExecEvent {
    /// One line of merged stdout/stderr, with its trailing `\n` (absent on a final
    /// unterminated line).
    Output(String),
    Done(Box<DoneInfo>),
}

/// The `done` payload. The first four keys are the v0.11 contract, in its order.
#[derive(Debug, Clone, Serialize)]
pub struct DoneInfo {
    pub exit_code: i32,
    pub duration_ms: u64,
    pub output: String,
    pub error: Option<String>,
    pub run_id: String,
    pub status: RunStatus,
    pub timed_out: bool,
    pub truncated: bool,
    pub oom_killed: bool,
}

/// The receiving end of an exec; dropping it does not stop the command.
pub type ExecStream = tokio::sync::mpsc::UnboundedReceiver<ExecEvent>;

/// What a client asks to run.
#[derive(Debug, Clone)]
pub struct ExecRequest {
    pub command: String,
    /// Seconds; `None` means the server default.
    pub timeout_seconds: Option<u64>,
}
