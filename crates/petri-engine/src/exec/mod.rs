//! Exec: the event stream a client sees, and the task that runs one command.

mod background;
mod install;
mod lines;
mod runner;
mod supervise;
mod tests_summary;

use petri_store::RunStatus;
use serde::Serialize;

pub(crate) use background::{
    BackgroundHandle, Control, SIGKILL, parse_signal, signal_names, tail_log,
};
pub use install::InstallSummary;
pub(crate) use runner::{ExecJob, new_run, run_exec};
pub(crate) use supervise::EXIT_KILLED;
pub use tests_summary::TestSummary;

/// One event of an exec stream. Every stream ends with exactly one [`ExecEvent::Done`].
#[derive(Debug, Clone)]
pub enum ExecEvent {
    /// One line of merged stdout/stderr, with its trailing `\n` (absent on a final
    /// unterminated line).
    Output(String),
    /// One line of dependency-installer output (its own event type; old clients ignore it).
    Install(String),
    /// In test mode, one line of the server under test (its own event type).
    Server(String),
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
    /// What the dependency step did, when the workspace has dependencies.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub install: Option<InstallSummary>,
    /// In test mode, what the test runner reported.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub test: Option<TestSummary>,
}

impl DoneInfo {
    /// A `done` for a run that produced no output.
    pub fn failed(run_id: String, exit_code: i32, status: RunStatus, error: String) -> Self {
        Self {
            exit_code,
            duration_ms: 0,
            output: String::new(),
            error: Some(error),
            run_id,
            status,
            timed_out: false,
            truncated: false,
            oom_killed: false,
            install: None,
            test: None,
        }
    }
}

/// The receiving end of an exec; dropping it does not stop the command.
pub type ExecStream = tokio::sync::mpsc::UnboundedReceiver<ExecEvent>;

/// What a client asks to run.
#[derive(Debug, Clone)]
pub struct ExecRequest {
    pub command: String,
    /// Seconds; `None` means the server default.
    pub timeout_seconds: Option<u64>,
    /// Test mode: `command` is the server (or script) under test.
    pub test: Option<TestRequest>,
}

/// How to test what `command` starts.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct TestRequest {
    /// The test runner (default: the language's, see `petri_deps::default_test_command`).
    pub test_command: Option<String>,
    pub ready_port: Option<u16>,
    pub ready_path: Option<String>,
    /// Seconds to wait for the server to be ready (default 180).
    pub ready_timeout_seconds: Option<u64>,
}
