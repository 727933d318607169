//! The HTTP layer: Petri v0.11's `/v1` routes (wire-compatible with the jhansi 0.1.7 SDK and
//! MCP server), the new file and run routes, SSE framing, JSON errors and the dashboard.
#![forbid(unsafe_code)]

mod error;
mod extract;
mod mcp;
mod pyjson;
mod routes;
mod sse;
mod views;

use std::sync::Arc;
use std::time::Duration;

use axum::Router;
use axum::extract::DefaultBodyLimit;
use axum::routing::{any, get, post};
use petri_engine::Engine;

pub use error::ApiError;

/// Shared state of every handler.
#[derive(Debug, Clone)]
pub struct AppState {
    pub engine: Arc<Engine>,
    /// Interval of `: keepalive` comments on quiet exec streams.
    pub keepalive: Duration,
    /// The address the server listens on, for `/health`.
    pub listen: String,
    /// `Host` names `/mcp` answers besides loopback ones (DNS-rebinding protection).
    pub mcp_allowed_hosts: Vec<String>,
    /// Host-name previews answer on `{port}-{sandbox}.{preview_host}` (`None`: only the
    /// path-based `/v1/sandboxes/{id}/ports/{port}/`).
    pub preview_host: Option<String>,
    /// Cancelled when the server stops: ends MCP sessions, whose streams would otherwise
    /// hold the graceful shutdown open.
    pub shutdown: tokio_util::sync::CancellationToken,
}

/// Largest JSON body accepted (commands are capped at 128 KiB by the engine).
const JSON_BODY_LIMIT: usize = 1 << 20;
/// Multipart framing on top of the upload itself.
const MULTIPART_OVERHEAD: usize = 64 << 10;

/// Builds the application.
pub fn router(state: AppState) -> Router {
    // The engine enforces the upload limit exactly; this outer bound also leaves room to
    // drain a refused upload so its client can read the 413 (see `drain_if_refused`).
    let upload_limit = usize::try_from(state.engine.config().upload_max_bytes)
        .unwrap_or(usize::MAX)
        .saturating_mul(2)
        .saturating_add(MULTIPART_OVERHEAD);
    let uploads = Router::new()
        .route(
            "/v1/sandboxes/{id}/files",
            post(routes::files::upload_file).get(routes::files::list),
        )
        .route("/v1/sandboxes/{id}/upload", post(routes::files::upload_zip))
        .layer(DefaultBodyLimit::max(upload_limit));
    Router::new()
        .route("/health", get(routes::status::health))
        .route("/v1/metrics", get(routes::status::metrics))
        .route(
            "/v1/sandboxes",
            post(routes::sandboxes::create).get(routes::sandboxes::list),
        )
        .route("/v1/sandboxes/active", get(routes::sandboxes::active))
        .route(
            "/v1/sandboxes/{id}",
            get(routes::sandboxes::get).delete(routes::sandboxes::delete),
        )
        .route(
            "/v1/sandboxes/{id}/files/{*path}",
            get(routes::files::download).delete(routes::files::delete),
        )
        .route("/v1/sandboxes/{id}/exec", post(routes::exec::exec))
        .route("/v1/sandboxes/{id}/processes", get(routes::processes::list))
        .route(
            "/v1/sandboxes/{id}/processes/{process_id}",
            get(routes::processes::get).delete(routes::processes::kill),
        )
        .route(
            "/v1/sandboxes/{id}/processes/{process_id}/output",
            get(routes::processes::output),
        )
        .route(
            "/v1/sandboxes/{id}/processes/{process_id}/signal",
            post(routes::processes::signal),
        )
        .route("/v1/sandboxes/{id}/ports/{port}", any(routes::ports::proxy))
        .route(
            "/v1/sandboxes/{id}/ports/{port}/",
            any(routes::ports::proxy),
        )
        .route(
            "/v1/sandboxes/{id}/ports/{port}/{*path}",
            any(routes::ports::proxy),
        )
        .route("/v1/sandboxes/{id}/runs", get(routes::runs::for_sandbox))
        .route("/v1/runs/{run_id}", get(routes::runs::get))
        .route("/v1/runs/{run_id}/output", get(routes::runs::output))
        .route(
            "/v1/runs/{run_id}/server-output",
            get(routes::runs::server_output),
        )
        .route("/v1/runs/{run_id}/egress", get(routes::runs::egress))
        .route("/v1/runs/{run_id}/sbom", get(routes::runs::sbom))
        .route("/dashboard", get(routes::dashboard::page))
        .layer(DefaultBodyLimit::max(JSON_BODY_LIMIT))
        .merge(uploads)
        .nest_service(
            "/mcp",
            mcp::service(
                state.engine.clone(),
                &state.mcp_allowed_hosts,
                state.shutdown.clone(),
            ),
        )
        .fallback(|| async { ApiError::not_found() })
        .layer(axum::middleware::from_fn_with_state(
            state.clone(),
            routes::ports::by_host,
        ))
        .method_not_allowed_fallback(|| async {
            ApiError::new(
                axum::http::StatusCode::METHOD_NOT_ALLOWED,
                "method_not_allowed",
                "Method Not Allowed",
            )
        })
        .with_state(state)
}
