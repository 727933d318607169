//! JSON shapes of sandboxes and runs. The v0.11 keys come first and keep their meaning;
//! the rest are additions old clients ignore.

use petri_engine::RunRecord;
use petri_engine::SandboxView;
use serde_json::{Value, json};

pub(crate) fn sandbox(view: &SandboxView) -> Value {
    let r = &view.record;
    json!({
        "id": r.id,
        "language": r.language,
        "status": view.status(),
        "agent": r.agent,
        "created_by": r.created_by,
        "created_at": r.created_at,
        "expires_at": r.expires_at,
        "last_active_at": r.last_active_at,
        "deleted_at": r.deleted_at,
        "limits": {
            "memory_mb": view.limits.memory_bytes >> 20,
            "pids": view.limits.pids,
            "cpus": view.limits.cpu_millis as f64 / 1000.0,
            "disk_mb": view.limits.disk_bytes >> 20,
        },
    })
}

pub(crate) fn run(r: &RunRecord) -> Value {
    json!({
        "id": r.id,
        "started_at": r.started_at,
        "completed_at": r.completed_at,
        "duration_ms": r.duration_ms,
        "exit_code": r.exit_code,
        "error": r.error,
        "sandbox_id": r.sandbox_id,
        "command": r.command,
        "status": r.status,
        "timeout_seconds": r.timeout_seconds,
        "output_bytes": r.output_bytes,
        "output_truncated": r.output_truncated,
        "output_evicted": r.output_evicted,
        "output_url": format!("/v1/runs/{}/output", r.id),
        "background": r.background,
        "test": r
            .test_summary
            .as_deref()
            .and_then(|summary| serde_json::from_str::<Value>(summary).ok()),
    })
}
