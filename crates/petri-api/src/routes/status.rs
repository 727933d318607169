//! Health and metrics.

use axum::Json;
use axum::extract::State;
use serde_json::{Value, json};

use crate::AppState;
use crate::error::ApiError;

pub(crate) async fn health(State(state): State<AppState>) -> Json<Value> {
    let info = state.engine.info();
    let identities = match info.host_uid_base {
        Some(base) => json!({
            "mode": "per-sandbox",
            "degraded": false,
            "note": format!("each sandbox runs as its own host uid, from {base} up"),
        }),
        None => json!({
            "mode": "shared",
            "degraded": true,
            "note": "identities degraded: sandboxes run as the server's uid (per-sandbox uids need root)",
        }),
    };
    let disk = match &info.disk {
        petri_engine::DiskMode::LoopExt4 => json!({
            "mode": "loop-ext4",
            "degraded": false,
            "note": "each workspace is its own filesystem of the sandbox's disk_mb: ENOSPC past it",
            "disk_mb": info.default_limits.disk_bytes >> 20,
        }),
        petri_engine::DiskMode::Unavailable { reason } => json!({
            "mode": "rlimit",
            "degraded": true,
            "note": format!("disk degraded: no per-sandbox filesystem ({reason}); only single files are capped at disk_mb"),
            "disk_mb": info.default_limits.disk_bytes >> 20,
        }),
    };
    let degraded: Vec<&str> = [
        ("limits", info.isolation.limits_degraded),
        ("identities", info.host_uid_base.is_none()),
        (
            "disk",
            !matches!(info.disk, petri_engine::DiskMode::LoopExt4),
        ),
    ]
    .into_iter()
    .filter_map(|(what, degraded)| degraded.then_some(what))
    .collect();
    Json(json!({
        "status": "ok",
        "degraded": degraded,
        "identities": identities,
        "disk": disk,
        "version": env!("CARGO_PKG_VERSION"),
        "listen": state.listen,
        "isolation": info.isolation,
        "limits": {
            "mode": info.isolation.limits_mode,
            "degraded": info.isolation.limits_degraded,
            "note": if info.isolation.limits_degraded { "limits degraded: no writable cgroup, using per-process rlimits" } else { "enforced by cgroups" },
            "memory_mb": info.default_limits.memory_bytes >> 20,
            "pids": info.default_limits.pids,
            "cpus": info.default_limits.cpu_millis as f64 / 1000.0,
            "exec_timeout_seconds": info.exec_timeout_seconds,
            "output_max_bytes": info.output_max_bytes,
            "upload_max_bytes": info.upload_max_bytes,
        },
        "workspace_root": info.workspace_root,
        "sandbox_ttl_seconds": info.sandbox_ttl_seconds,
        "log_max_bytes": info.log_max_bytes,
        "installs": info.installs,
    }))
}

pub(crate) async fn metrics(State(state): State<AppState>) -> Result<Json<Value>, ApiError> {
    let metrics = state.engine.metrics().await?;
    Ok(Json(
        serde_json::to_value(metrics).expect("metrics serialise"),
    ))
}
