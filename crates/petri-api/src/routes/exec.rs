//! `POST /v1/sandboxes/{id}/exec`: validation happens before the stream starts, so bad input
//! is a normal JSON error; after that the stream always ends with one `done`.

use axum::extract::{Path, State};
use axum::http::StatusCode;
use axum::response::Response;
use petri_engine::ExecRequest;
use serde::Deserialize;
use serde_json::Value;

use crate::AppState;
use crate::error::ApiError;
use crate::extract::ApiJson;
use crate::sse::{self, OutputFormat};

#[derive(Debug, Deserialize)]
pub(crate) struct ExecBody {
    command: Option<String>,
    #[serde(default)]
    test: bool,
    #[serde(default)]
    timeout: Option<u64>,
    #[serde(default)]
    output_format: Option<String>,
}

pub(crate) async fn exec(
    State(state): State<AppState>,
    Path(id): Path<String>,
    body: ApiJson<ExecBody>,
) -> Result<Response, ApiError> {
    let ApiJson { value, raw } = body;
    let Some(command) = value.command else {
        return Err(ApiError::validation(
            &["body", "command"],
            "missing",
            "Field required",
            Value::Object(raw),
        ));
    };
    // The published jhansi SDK always sends `test` and reads only JSON-shaped output data;
    // every other client (the MCP server, curl) gets the raw v0.11 framing.
    let format = match value.output_format.as_deref() {
        Some("raw") => OutputFormat::Raw,
        Some("json") => OutputFormat::Json,
        None if raw.contains_key("test") => OutputFormat::Json,
        None => OutputFormat::Raw,
        Some(other) => {
            return Err(ApiError::validation(
                &["body", "output_format"],
                "enum",
                "Input should be 'raw' or 'json'",
                Value::String(other.to_string()),
            ));
        }
    };
    if value.test {
        state.engine.sandbox(&id).await?;
        return Err(ApiError::new(
            StatusCode::NOT_IMPLEMENTED,
            "not_implemented",
            "test mode is not available on this server yet",
        ));
    }
    let stream = state
        .engine
        .exec(
            &id,
            ExecRequest {
                command,
                timeout_seconds: value.timeout,
            },
        )
        .await?;
    Ok(sse::response(stream, format, state.keepalive))
}
