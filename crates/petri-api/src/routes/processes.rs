//! Background processes of a sandbox (`POST .../exec` with `"background": true` starts one):
//! list, inspect, follow the output (SSE, from the start, until it ends with one `done`),
//! signal, kill.

use axum::Json;
use axum::extract::{Path, State};
use axum::response::Response;
use petri_engine::ProcessView;
use serde::Deserialize;
use serde_json::Value;

use crate::AppState;
use crate::error::ApiError;
use crate::extract::ApiJson;
use crate::sse::{self, OutputFormat};

pub(crate) async fn list(
    State(state): State<AppState>,
    Path(id): Path<String>,
) -> Result<Json<Vec<ProcessView>>, ApiError> {
    Ok(Json(state.engine.processes(&id).await?))
}

pub(crate) async fn get(
    State(state): State<AppState>,
    Path((id, process_id)): Path<(String, String)>,
) -> Result<Json<ProcessView>, ApiError> {
    Ok(Json(state.engine.process(&id, &process_id).await?))
}

pub(crate) async fn output(
    State(state): State<AppState>,
    Path((id, process_id)): Path<(String, String)>,
) -> Result<Response, ApiError> {
    let stream = state.engine.follow_process(&id, &process_id).await?;
    Ok(sse::response(stream, OutputFormat::Raw, state.keepalive))
}

#[derive(Debug, Deserialize)]
pub(crate) struct SignalBody {
    /// A name (`TERM`, `SIGTERM`) or a number (15).
    signal: Option<Value>,
}

pub(crate) async fn signal(
    State(state): State<AppState>,
    Path((id, process_id)): Path<(String, String)>,
    body: ApiJson<SignalBody>,
) -> Result<Json<ProcessView>, ApiError> {
    let ApiJson { value, raw } = body;
    let signal = match value.signal {
        Some(Value::String(name)) => name,
        Some(Value::Number(number)) => number.to_string(),
        Some(other) => {
            return Err(ApiError::validation(
                &["body", "signal"],
                "string_type",
                "Input should be a signal name or number",
                other,
            ));
        }
        None => {
            return Err(ApiError::validation(
                &["body", "signal"],
                "missing",
                "Field required",
                Value::Object(raw),
            ));
        }
    };
    Ok(Json(
        state
            .engine
            .signal_process(&id, &process_id, &signal)
            .await?,
    ))
}

pub(crate) async fn kill(
    State(state): State<AppState>,
    Path((id, process_id)): Path<(String, String)>,
) -> Result<Json<ProcessView>, ApiError> {
    Ok(Json(state.engine.kill_process(&id, &process_id).await?))
}
