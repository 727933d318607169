//! Mapping engine errors to HTTP: a status code, a stable machine-readable `code`, and the
//! v0.11 `detail` message. Internal failures are logged with their cause and reported
//! without it.

use axum::Json;
use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};
use petri_engine::EngineError;
use serde_json::{Value, json};

/// An error response.
#[derive(Debug)]
pub struct ApiError {
    status: StatusCode,
    code: &'static str,
    /// Boxed: error values travel through every handler's `Result`.
    detail: Box<Value>,
    extra: Option<Box<(&'static str, Value)>>,
}

impl ApiError {
    pub fn new(status: StatusCode, code: &'static str, detail: impl Into<String>) -> Self {
        Self {
            status,
            code,
            detail: Box::new(Value::String(detail.into())),
            extra: None,
        }
    }

    /// A 422 in the pydantic shape FastAPI used: `detail` is a list of problems.
    pub fn validation(loc: &[&str], kind: &str, msg: impl Into<String>, input: Value) -> Self {
        Self {
            status: StatusCode::UNPROCESSABLE_ENTITY,
            code: "validation_error",
            detail: Box::new(
                json!([{ "type": kind, "loc": loc, "msg": msg.into(), "input": input }]),
            ),
            extra: None,
        }
    }

    pub fn status(&self) -> StatusCode {
        self.status
    }

    pub fn not_found() -> Self {
        Self::new(StatusCode::NOT_FOUND, "not_found", "Not Found")
    }

    fn with(mut self, key: &'static str, value: Value) -> Self {
        self.extra = Some(Box::new((key, value)));
        self
    }
}

impl IntoResponse for ApiError {
    fn into_response(self) -> Response {
        let mut body = json!({ "detail": self.detail, "code": self.code });
        if let Some(extra) = self.extra {
            let (key, value) = *extra;
            body[key] = value;
        }
        (self.status, Json(body)).into_response()
    }
}

impl From<EngineError> for ApiError {
    fn from(error: EngineError) -> Self {
        use StatusCode as S;
        let message = error.to_string();
        match error {
            EngineError::SandboxNotFound { .. } => {
                Self::new(S::NOT_FOUND, "sandbox_not_found", message)
            }
            EngineError::RunNotFound { .. } => Self::new(S::NOT_FOUND, "run_not_found", message),
            EngineError::PathNotFound { .. } => Self::new(S::NOT_FOUND, "path_not_found", message),
            EngineError::UnsupportedLanguage { supported, .. } => {
                Self::new(S::UNPROCESSABLE_ENTITY, "unsupported_language", message)
                    .with("supported", json!(supported))
            }
            EngineError::InvalidInput { .. } => {
                Self::new(S::UNPROCESSABLE_ENTITY, "invalid_input", message)
            }
            EngineError::InvalidPath { .. } => Self::new(S::BAD_REQUEST, "invalid_path", message),
            EngineError::InvalidZip { .. } => Self::new(S::BAD_REQUEST, "invalid_zip", message),
            EngineError::TooLarge { .. } => Self::new(S::PAYLOAD_TOO_LARGE, "too_large", message),
            EngineError::SandboxBusy { .. } => {
                Self::new(S::TOO_MANY_REQUESTS, "sandbox_busy", message)
            }
            EngineError::SbomNotFound { .. } => Self::new(S::NOT_FOUND, "sbom_not_found", message),
            EngineError::OutputEvicted { .. } => Self::new(S::GONE, "output_evicted", message),
            EngineError::ProcessNotFound { .. } => {
                Self::new(S::NOT_FOUND, "process_not_found", message)
            }
            EngineError::ProcessEnded { .. } => Self::new(S::CONFLICT, "process_ended", message),
            EngineError::ProcessStarting { .. } => {
                Self::new(S::CONFLICT, "process_starting", message)
            }
            EngineError::TooManyProcesses { .. } => {
                Self::new(S::TOO_MANY_REQUESTS, "too_many_processes", message)
            }
            EngineError::PortClosed { .. } => Self::new(S::BAD_GATEWAY, "port_closed", message),
            EngineError::ShuttingDown => {
                Self::new(S::SERVICE_UNAVAILABLE, "shutting_down", message)
            }
            EngineError::Store(_)
            | EngineError::Sandbox(_)
            | EngineError::Io { .. }
            | EngineError::Task(_) => {
                tracing::error!(error = %message, "internal error");
                Self::new(
                    S::INTERNAL_SERVER_ERROR,
                    "internal_error",
                    "Internal Server Error",
                )
            }
        }
    }
}
