//! Request parsing that answers bad input with our JSON errors instead of axum's plain text.

use axum::extract::multipart::{Field, Multipart};
use axum::extract::{FromRequest, Request};
use axum::http::StatusCode;
use bytes::Bytes;
use petri_engine::{ChunkSource, EngineError};
use serde::de::DeserializeOwned;
use serde_json::Value;

use crate::error::ApiError;

/// A JSON body. An empty body counts as `{}` (v0.11 answered 422 to a bodiless create).
#[derive(Debug)]
pub struct ApiJson<T> {
    pub value: T,
    /// The raw object, for callers that care which keys were present.
    pub raw: serde_json::Map<String, Value>,
}

impl<S: Send + Sync, T: DeserializeOwned> FromRequest<S> for ApiJson<T> {
    type Rejection = ApiError;

    async fn from_request(request: Request, state: &S) -> Result<Self, Self::Rejection> {
        let bytes = Bytes::from_request(request, state)
            .await
            .map_err(|rejection| {
                let status = rejection.status();
                if status == StatusCode::PAYLOAD_TOO_LARGE {
                    ApiError::new(status, "too_large", "request body is too large")
                } else {
                    ApiError::new(
                        StatusCode::BAD_REQUEST,
                        "invalid_body",
                        rejection.body_text(),
                    )
                }
            })?;
        let raw: Value = if bytes.iter().all(u8::is_ascii_whitespace) {
            Value::Object(Default::default())
        } else {
            serde_json::from_slice(&bytes).map_err(|e| {
                ApiError::new(
                    StatusCode::BAD_REQUEST,
                    "invalid_json",
                    format!("request body is not valid JSON: {e}"),
                )
            })?
        };
        let Value::Object(map) = raw else {
            return Err(ApiError::validation(
                &["body"],
                "model_attributes_type",
                "Input should be a JSON object",
                raw,
            ));
        };
        let value = serde_json::from_value(Value::Object(map.clone())).map_err(|e| {
            ApiError::validation(
                &["body"],
                "invalid",
                e.to_string(),
                Value::Object(map.clone()),
            )
        })?;
        Ok(Self { value, raw: map })
    }
}

/// A multipart body, or the v0.11-shaped 422 when the request is not one.
pub fn accept_multipart(
    multipart: Result<Multipart, axum::extract::multipart::MultipartRejection>,
) -> Result<Multipart, ApiError> {
    multipart.map_err(|e| {
        ApiError::validation(
            &["body"],
            "multipart",
            format!(
                "expected a multipart/form-data body with a 'file' part: {}",
                e.body_text()
            ),
            Value::Null,
        )
    })
}

/// Longest we keep reading a refused upload.
const DRAIN_TIMEOUT: std::time::Duration = std::time::Duration::from_secs(10);

/// When an upload is refused part-way (413), reads and discards the rest of the body (bounded
/// by the router's outer body limit and a timeout) before answering. Closing a socket with
/// unread data makes the kernel send a reset, and the client would lose our answer.
pub async fn drain_if_refused<T>(
    multipart: &mut Multipart,
    result: Result<T, ApiError>,
) -> Result<T, ApiError> {
    if let Err(error) = &result
        && error.status() == StatusCode::PAYLOAD_TOO_LARGE
    {
        let drain = async {
            while let Ok(Some(mut field)) = multipart.next_field().await {
                while let Ok(Some(_)) = field.chunk().await {}
            }
        };
        let _ = tokio::time::timeout(DRAIN_TIMEOUT, drain).await;
    }
    result
}

/// The error for a multipart body without a `file` part, in the v0.11 shape.
pub fn missing_file() -> ApiError {
    ApiError::validation(&["body", "file"], "missing", "Field required", Value::Null)
}

/// Fetches the next multipart part.
pub async fn next_field(multipart: &mut Multipart) -> Result<Option<Field<'_>>, ApiError> {
    multipart.next_field().await.map_err(multipart_error)
}

pub(crate) fn multipart_error(error: axum::extract::multipart::MultipartError) -> ApiError {
    if error.status() == StatusCode::PAYLOAD_TOO_LARGE {
        ApiError::new(
            StatusCode::PAYLOAD_TOO_LARGE,
            "too_large",
            "upload exceeds PETRI_MAX_UPLOAD_MB",
        )
    } else {
        ApiError::new(
            StatusCode::BAD_REQUEST,
            "invalid_multipart",
            format!("malformed multipart body: {}", error.body_text()),
        )
    }
}

/// Feeds a multipart field to the engine chunk by chunk, so uploads never sit in memory.
#[derive(Debug)]
pub struct FieldChunks<'a>(pub Field<'a>);

impl ChunkSource for FieldChunks<'_> {
    async fn next_chunk(&mut self) -> Result<Option<Bytes>, EngineError> {
        self.0.chunk().await.map_err(|e| {
            if e.status() == StatusCode::PAYLOAD_TOO_LARGE {
                EngineError::TooLarge {
                    what: "upload".into(),
                    limit: "PETRI_MAX_UPLOAD_MB".into(),
                }
            } else {
                EngineError::InvalidInput {
                    field: "file",
                    reason: format!("upload interrupted: {}", e.body_text()),
                }
            }
        })
    }
}
