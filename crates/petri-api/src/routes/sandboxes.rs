//! Create, get, list, active list and soft delete.

use std::collections::HashMap;

use axum::Json;
use axum::extract::{Path, Query, State};
use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};
use petri_engine::CreateSandbox;
use serde::Deserialize;
use serde_json::Value;

use crate::AppState;
use crate::error::ApiError;
use crate::extract::ApiJson;
use crate::views;

#[derive(Debug, Deserialize)]
pub(crate) struct CreateBody {
    #[serde(default = "default_language")]
    language: String,
    #[serde(default)]
    agent: Option<String>,
    #[serde(default = "default_created_by")]
    created_by: String,
    #[serde(default)]
    memory_mb: Option<u64>,
    #[serde(default)]
    pids: Option<u64>,
    #[serde(default)]
    cpus: Option<f64>,
    #[serde(default)]
    disk_mb: Option<u64>,
}

fn default_language() -> String {
    "python".into()
}

fn default_created_by() -> String {
    "unknown".into()
}

pub(crate) async fn create(
    State(state): State<AppState>,
    body: ApiJson<CreateBody>,
) -> Result<Response, ApiError> {
    let body = body.value;
    let view = state
        .engine
        .create_sandbox(CreateSandbox {
            language: body.language,
            agent: body.agent,
            created_by: body.created_by,
            memory_mb: body.memory_mb,
            pids: body.pids,
            cpus: body.cpus,
            disk_mb: body.disk_mb,
        })
        .await?;
    Ok((StatusCode::CREATED, Json(views::sandbox(&view))).into_response())
}

pub(crate) async fn get(
    State(state): State<AppState>,
    Path(id): Path<String>,
) -> Result<Json<Value>, ApiError> {
    Ok(Json(views::sandbox(&state.engine.sandbox(&id).await?)))
}

fn int_param(
    params: &HashMap<String, String>,
    name: &'static str,
    default: u64,
    max: u64,
) -> Result<u64, ApiError> {
    let Some(raw) = params.get(name) else {
        return Ok(default);
    };
    match raw.parse::<u64>() {
        Ok(value) if value <= max => Ok(value),
        _ => Err(ApiError::validation(
            &["query", name],
            "int_parsing",
            format!("Input should be an integer between 0 and {max}"),
            Value::String(raw.clone()),
        )),
    }
}

pub(crate) async fn list(
    State(state): State<AppState>,
    Query(params): Query<HashMap<String, String>>,
) -> Result<Json<Value>, ApiError> {
    let limit = int_param(&params, "limit", 50, 1000)?;
    let offset = int_param(&params, "offset", 0, i64::MAX as u64)?;
    let views = state.engine.list_sandboxes(limit, offset).await?;
    Ok(Json(views.iter().map(views::sandbox).collect()))
}

pub(crate) async fn active(State(state): State<AppState>) -> Result<Json<Value>, ApiError> {
    let views = state.engine.list_active().await?;
    Ok(Json(views.iter().map(views::sandbox).collect()))
}

pub(crate) async fn delete(
    State(state): State<AppState>,
    Path(id): Path<String>,
) -> Result<StatusCode, ApiError> {
    state.engine.delete_sandbox(&id).await?;
    Ok(StatusCode::NO_CONTENT)
}
