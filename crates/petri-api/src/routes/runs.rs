//! Run history: per sandbox, one run, and a run's stored output.

use axum::Json;
use axum::body::Body;
use axum::extract::{Path, State};
use axum::http::header;
use axum::response::{IntoResponse, Response};
use serde_json::Value;

use crate::AppState;
use crate::error::ApiError;
use crate::views;

pub(crate) async fn for_sandbox(
    State(state): State<AppState>,
    Path(id): Path<String>,
) -> Result<Json<Value>, ApiError> {
    let runs = state.engine.runs(&id).await?;
    Ok(Json(runs.iter().map(views::run).collect()))
}

pub(crate) async fn get(
    State(state): State<AppState>,
    Path(run_id): Path<String>,
) -> Result<Json<Value>, ApiError> {
    Ok(Json(views::run(&state.engine.run(&run_id).await?)))
}

pub(crate) async fn egress(
    State(state): State<AppState>,
    Path(run_id): Path<String>,
) -> Result<Json<Value>, ApiError> {
    let events = state.engine.run_egress(&run_id).await?;
    Ok(Json(
        serde_json::to_value(events).expect("egress records serialise"),
    ))
}

pub(crate) async fn sbom(
    State(state): State<AppState>,
    Path(run_id): Path<String>,
) -> Result<Response, ApiError> {
    let document = state.engine.run_sbom(&run_id).await?;
    Ok((
        [(header::CONTENT_TYPE, "application/vnd.cyclonedx+json")],
        document,
    )
        .into_response())
}

/// In test mode, what the server under test printed.
pub(crate) async fn server_output(
    State(state): State<AppState>,
    Path(run_id): Path<String>,
) -> Result<Response, ApiError> {
    let bytes = state.engine.run_server_output(&run_id).await?;
    Ok(([(header::CONTENT_TYPE, "text/plain; charset=utf-8")], bytes).into_response())
}

pub(crate) async fn output(
    State(state): State<AppState>,
    Path(run_id): Path<String>,
) -> Result<Response, ApiError> {
    let file = state.engine.run_output(&run_id).await?;
    let body = Body::from_stream(tokio_util::io::ReaderStream::new(file));
    Ok(([(header::CONTENT_TYPE, "text/plain; charset=utf-8")], body).into_response())
}
