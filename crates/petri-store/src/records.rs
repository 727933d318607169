//! Plain records read from and written to the registry.

use serde::Serialize;

use crate::StoreError;

/// Lifecycle of a sandbox as persisted. Whether an exec is running right now is live state
/// the engine tracks, not a stored status.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum SandboxStatus {
    /// Created, never executed anything.
    Created,
    /// Has executed at least once.
    Active,
    /// Soft-deleted by the TTL sweeper.
    Expired,
    /// Soft-deleted by a client.
    Deleted,
}

impl SandboxStatus {
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Created => "created",
            Self::Active => "active",
            Self::Expired => "expired",
            Self::Deleted => "deleted",
        }
    }

    pub(crate) fn parse(value: String) -> Result<Self, StoreError> {
        Ok(match value.as_str() {
            "created" => Self::Created,
            "active" => Self::Active,
            "expired" => Self::Expired,
            "deleted" => Self::Deleted,
            _ => {
                return Err(StoreError::BadEnum {
                    kind: "sandbox status",
                    value,
                });
            }
        })
    }
}

/// Final (or current) state of a run.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum RunStatus {
    Running,
    Succeeded,
    Failed,
    TimedOut,
    Killed,
    Interrupted,
}

impl RunStatus {
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Running => "running",
            Self::Succeeded => "succeeded",
            Self::Failed => "failed",
            Self::TimedOut => "timed_out",
            Self::Killed => "killed",
            Self::Interrupted => "interrupted",
        }
    }

    pub(crate) fn parse(value: String) -> Result<Self, StoreError> {
        Ok(match value.as_str() {
            "running" => Self::Running,
            "succeeded" => Self::Succeeded,
            "failed" => Self::Failed,
            "timed_out" => Self::TimedOut,
            "killed" => Self::Killed,
            "interrupted" => Self::Interrupted,
            _ => {
                return Err(StoreError::BadEnum {
                    kind: "run status",
                    value,
                });
            }
        })
    }
}

/// A sandbox row to insert.
#[derive(Debug, Clone)]
pub struct NewSandbox {
    pub id: String,
    pub language: String,
    pub agent: Option<String>,
    pub created_by: String,
    pub created_at: String,
    pub expires_at: String,
    pub memory_mb: Option<u64>,
    pub pids_max: Option<u64>,
    pub cpu_millis: Option<u64>,
    pub disk_mb: Option<u64>,
    /// Give the sandbox its own host uid, the next one from this base up (never reused).
    pub host_uid_base: Option<u32>,
}

/// A sandbox row as stored.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SandboxRecord {
    pub id: String,
    pub language: String,
    pub status: SandboxStatus,
    pub agent: Option<String>,
    pub created_by: String,
    pub created_at: String,
    pub last_active_at: String,
    pub expires_at: String,
    pub deleted_at: Option<String>,
    pub memory_mb: Option<u64>,
    pub pids_max: Option<u64>,
    pub cpu_millis: Option<u64>,
    pub disk_mb: Option<u64>,
    pub host_uid: Option<u32>,
}

/// A run row to insert when a command starts.
#[derive(Debug, Clone)]
pub struct NewRun {
    pub id: String,
    pub sandbox_id: String,
    pub command: String,
    pub started_at: String,
    pub timeout_seconds: u64,
    /// Started detached (a background process).
    pub background: bool,
}

/// How a run ended.
#[derive(Debug, Clone)]
pub struct RunOutcome {
    pub status: RunStatus,
    pub completed_at: String,
    pub duration_ms: u64,
    pub exit_code: Option<i32>,
    pub error: Option<String>,
    pub output_bytes: u64,
    pub output_truncated: bool,
    /// Test mode: the runner's verdict, as JSON.
    pub test_summary: Option<String>,
}

/// A run row as stored.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RunRecord {
    pub id: String,
    pub sandbox_id: String,
    pub command: String,
    pub status: RunStatus,
    pub started_at: String,
    pub completed_at: Option<String>,
    pub duration_ms: Option<u64>,
    pub exit_code: Option<i32>,
    pub error: Option<String>,
    pub timeout_seconds: u64,
    pub output_bytes: u64,
    pub output_truncated: bool,
    pub output_evicted: bool,
    pub test_summary: Option<String>,
    pub background: bool,
}

/// The v0.11 metrics, computed in SQL.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Metrics {
    pub sandboxes_active: u64,
    pub sandboxes_total: u64,
    pub runs_total: u64,
    pub runs_failed: u64,
    /// `None` when there are no finished runs: there is no rate to report.
    pub success_rate: Option<f64>,
    pub avg_duration_ms: u64,
    pub by_agent: std::collections::BTreeMap<String, AgentMetrics>,
}

/// Per-agent slice of [`Metrics`].
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct AgentMetrics {
    pub runs: u64,
    pub success_rate: f64,
}

/// A successful dependency install.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct InstallRecord {
    pub sandbox_id: String,
    pub fingerprint: String,
    pub source: String,
    pub installed_at: String,
    pub run_id: String,
    pub sbom_id: Option<String>,
}

/// One connection attempt through the egress proxy.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct EgressRecord {
    pub sandbox_id: String,
    pub run_id: String,
    pub at: String,
    pub target: String,
    pub allowed: bool,
    pub detail: Option<String>,
    pub bytes_up: u64,
    pub bytes_down: u64,
}
