//! `POST /v1/sandboxes/{id}/exec`: validation happens before the stream starts, so bad input
//! is a normal JSON error; after that the stream always ends with one `done`.

use axum::Json;
use axum::extract::{Path, State};
use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};
use petri_engine::{ExecRequest, TestRequest};
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
    /// Test mode: the test runner (default: the language's).
    #[serde(default)]
    test_command: Option<String>,
    #[serde(default)]
    ready_port: Option<u16>,
    #[serde(default)]
    ready_path: Option<String>,
    /// Seconds the server gets to become ready.
    #[serde(default)]
    ready_timeout: Option<u64>,
    /// Start detached: answer at once with the process's id (see `routes::processes`).
    #[serde(default)]
    background: bool,
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
        // Exactly the SDK's shape: test mode's own options mean a client that reads raw lines.
        None if raw.len() == 2 && raw.contains_key("test") && raw.contains_key("command") => {
            OutputFormat::Json
        }
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
    let request = ExecRequest {
        command,
        timeout_seconds: value.timeout,
        test: value.test.then_some(TestRequest {
            test_command: value.test_command,
            ready_port: value.ready_port,
            ready_path: value.ready_path,
            ready_timeout_seconds: value.ready_timeout,
        }),
    };
    if value.background {
        let process = state.engine.start_background(&id, request).await?;
        return Ok((StatusCode::ACCEPTED, Json(process)).into_response());
    }
    let stream = state.engine.exec(&id, request).await?;
    Ok(sse::response(stream, format, state.keepalive))
}
