//! File upload, zip upload, listing and download.

use axum::Json;
use axum::body::Body;
use axum::extract::multipart::MultipartRejection;
use axum::extract::{Multipart, Path, State};
use axum::http::{StatusCode, header};
use axum::response::{IntoResponse, Response};
use petri_engine::FileContent;
use serde_json::json;

use crate::AppState;
use crate::error::ApiError;
use crate::extract::{FieldChunks, accept_multipart, drain_if_refused, missing_file, next_field};

pub(crate) async fn upload_file(
    State(state): State<AppState>,
    Path(id): Path<String>,
    multipart: Result<Multipart, MultipartRejection>,
) -> Result<Response, ApiError> {
    // Unknown sandboxes are refused before the body is read.
    state.engine.sandbox(&id).await?;
    let mut multipart = accept_multipart(multipart)?;
    // Other parts are skipped; the first part named `file` is the upload.
    while let Some(field) = next_field(&mut multipart).await? {
        if field.name() != Some("file") {
            continue;
        }
        let Some(filename) = field.file_name().map(str::to_string) else {
            return Err(ApiError::new(
                StatusCode::BAD_REQUEST,
                "invalid_path",
                "Filename is missing",
            ));
        };
        let size = state
            .engine
            .upload_file(&id, &filename, FieldChunks(field))
            .await
            .map_err(ApiError::from);
        let size = drain_if_refused(&mut multipart, size).await?;
        return Ok((
            StatusCode::CREATED,
            Json(json!({ "filename": filename, "size": size })),
        )
            .into_response());
    }
    Err(missing_file())
}

pub(crate) async fn upload_zip(
    State(state): State<AppState>,
    Path(id): Path<String>,
    multipart: Result<Multipart, MultipartRejection>,
) -> Result<Response, ApiError> {
    state.engine.sandbox(&id).await?;
    let mut multipart = accept_multipart(multipart)?;
    while let Some(field) = next_field(&mut multipart).await? {
        if field.name() != Some("file") {
            continue;
        }
        let files = state.engine.upload_zip(&id, FieldChunks(field)).await?;
        return Ok((
            StatusCode::CREATED,
            Json(json!({ "status": "uploaded", "files": files })),
        )
            .into_response());
    }
    Err(missing_file())
}

pub(crate) async fn list(
    State(state): State<AppState>,
    Path(id): Path<String>,
) -> Result<Response, ApiError> {
    let entries = state.engine.list_files(&id, None).await?;
    Ok(Json(entries).into_response())
}

pub(crate) async fn download(
    State(state): State<AppState>,
    Path((id, path)): Path<(String, String)>,
) -> Result<Response, ApiError> {
    match state.engine.read_file(&id, &path).await? {
        FileContent::Dir(entries) => Ok(Json(entries).into_response()),
        FileContent::File { file, size } => {
            let body = Body::from_stream(tokio_util::io::ReaderStream::new(file));
            Ok((
                [
                    (header::CONTENT_TYPE, "application/octet-stream".to_string()),
                    (header::CONTENT_LENGTH, size.to_string()),
                ],
                body,
            )
                .into_response())
        }
    }
}
