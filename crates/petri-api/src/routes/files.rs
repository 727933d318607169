//! File upload, zip upload, listing and download.

use axum::Json;
use axum::body::Body;
use axum::extract::multipart::{Field, MultipartRejection};
use axum::extract::{Multipart, Path, State};
use axum::http::{StatusCode, header};
use axum::response::{IntoResponse, Response};
use petri_engine::FileContent;
use serde_json::json;

use crate::AppState;
use crate::error::ApiError;
use crate::extract::{FieldChunks, accept_multipart, drain_if_refused, missing_file, next_field};

/// Refuses unknown sandboxes before the body is read, then hands the first part named `file`
/// to `upload` (other parts are skipped). A refused (413) upload is drained so the client can
/// read the answer.
async fn receive_file<T>(
    state: &AppState,
    id: &str,
    multipart: Result<Multipart, MultipartRejection>,
    upload: impl AsyncFnOnce(Field<'_>) -> Result<T, ApiError>,
) -> Result<T, ApiError> {
    state.engine.sandbox(id).await?;
    let mut multipart = accept_multipart(multipart)?;
    while let Some(field) = next_field(&mut multipart).await? {
        if field.name() != Some("file") {
            continue;
        }
        let result = upload(field).await;
        return drain_if_refused(&mut multipart, result).await;
    }
    Err(missing_file())
}

pub(crate) async fn upload_file(
    State(state): State<AppState>,
    Path(id): Path<String>,
    multipart: Result<Multipart, MultipartRejection>,
) -> Result<Response, ApiError> {
    let (filename, size) = receive_file(&state, &id, multipart, async |field: Field<'_>| {
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
            .await?;
        Ok((filename, size))
    })
    .await?;
    Ok((
        StatusCode::CREATED,
        Json(json!({ "filename": filename, "size": size })),
    )
        .into_response())
}

pub(crate) async fn upload_zip(
    State(state): State<AppState>,
    Path(id): Path<String>,
    multipart: Result<Multipart, MultipartRejection>,
) -> Result<Response, ApiError> {
    let files = receive_file(&state, &id, multipart, async |field: Field<'_>| {
        Ok(state.engine.upload_zip(&id, FieldChunks(field)).await?)
    })
    .await?;
    Ok((
        StatusCode::CREATED,
        Json(json!({ "status": "uploaded", "files": files })),
    )
        .into_response())
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

pub(crate) async fn delete(
    State(state): State<AppState>,
    Path((id, path)): Path<(String, String)>,
) -> Result<StatusCode, ApiError> {
    state.engine.delete_file(&id, &path).await?;
    Ok(StatusCode::NO_CONTENT)
}
