//! A read-only HTML dashboard rendered on the server. Every value shown comes from clients or
//! from sandboxed output, so every value is escaped, and the page forbids scripts outright.

use std::fmt::Write;

use axum::extract::State;
use axum::http::header;
use axum::response::{IntoResponse, Response};

use crate::AppState;
use crate::error::ApiError;
use crate::views;

/// Escapes text for HTML element content and quoted attribute values.
pub(crate) fn escape(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    for ch in text.chars() {
        match ch {
            '&' => out.push_str("&amp;"),
            '<' => out.push_str("&lt;"),
            '>' => out.push_str("&gt;"),
            '"' => out.push_str("&quot;"),
            '\'' => out.push_str("&#39;"),
            _ => out.push(ch),
        }
    }
    out
}

fn cell(value: &serde_json::Value) -> String {
    match value {
        serde_json::Value::Null => String::new(),
        serde_json::Value::String(s) => escape(s),
        other => escape(&other.to_string()),
    }
}

fn table(out: &mut String, columns: &[&str], rows: &[serde_json::Value]) {
    out.push_str("<table><tr>");
    for column in columns {
        let _ = write!(out, "<th>{}</th>", escape(column));
    }
    out.push_str("</tr>");
    for row in rows {
        out.push_str("<tr>");
        for column in columns {
            let _ = write!(out, "<td>{}</td>", cell(&row[*column]));
        }
        out.push_str("</tr>");
    }
    out.push_str("</table>");
}

pub(crate) async fn page(State(state): State<AppState>) -> Result<Response, ApiError> {
    let sandboxes = state.engine.list_sandboxes(100, 0).await?;
    let runs = state.engine.recent_runs(100).await?;
    let metrics = state.engine.metrics().await?;
    let mut html = String::from(
        "<!doctype html><html><head><meta charset=\"utf-8\"><title>Petri</title><style>\
         body{font-family:sans-serif;margin:2em}table{border-collapse:collapse;margin-bottom:2em}\
         td,th{border:1px solid #ccc;padding:4px 8px;text-align:left;font-size:13px}\
         td{max-width:40em;overflow-wrap:anywhere}</style></head><body><h1>Petri</h1>",
    );
    let _ = write!(
        html,
        "<p>{} live of {} sandboxes &middot; {} runs, {} failed</p>",
        metrics.sandboxes_active, metrics.sandboxes_total, metrics.runs_total, metrics.runs_failed
    );
    html.push_str("<h2>Sandboxes</h2>");
    let rows: Vec<_> = sandboxes.iter().map(views::sandbox).collect();
    table(
        &mut html,
        &[
            "id",
            "language",
            "status",
            "agent",
            "created_by",
            "created_at",
            "expires_at",
            "deleted_at",
        ],
        &rows,
    );
    html.push_str("<h2>Recent runs</h2>");
    let rows: Vec<_> = runs.iter().map(views::run).collect();
    table(
        &mut html,
        &[
            "id",
            "sandbox_id",
            "command",
            "status",
            "exit_code",
            "duration_ms",
            "started_at",
            "error",
        ],
        &rows,
    );
    html.push_str("</body></html>");
    Ok((
        [
            (header::CONTENT_TYPE, "text/html; charset=utf-8"),
            (
                header::CONTENT_SECURITY_POLICY,
                "default-src 'none'; style-src 'unsafe-inline'",
            ),
            (header::X_CONTENT_TYPE_OPTIONS, "nosniff"),
        ],
        html,
    )
        .into_response())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn escapes_markup_and_quotes() {
        assert_eq!(
            escape("<img src=x onerror=\"alert('x')\">&"),
            "&lt;img src=x onerror=&quot;alert(&#39;x&#39;)&quot;&gt;&amp;"
        );
    }
}
