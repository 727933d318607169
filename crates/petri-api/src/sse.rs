//! The exec stream, framed byte for byte as v0.11 did, plus keepalive comments.
//!
//! `event: output\ndata: <line>\n\n` per line (the line keeps its own `\n`), then exactly one
//! `event: done\ndata: <json>\n\n`. The published Python SDK (its body is exactly `{"command",
//! "test"}`) gets output data as `{"type": "output", "data": ...}`, the only shape it can read.
//! Dependency installs and test mode's server add `event: install` / `event: server` lines.

use std::time::Duration;

use axum::body::Body;
use axum::http::{HeaderValue, header};
use axum::response::{IntoResponse, Response};
use bytes::Bytes;
use petri_engine::{DoneInfo, ExecEvent, ExecStream, RunStatus};
use serde_json::json;

use crate::pyjson;

/// How output lines are put into `data:` fields.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum OutputFormat {
    /// v0.11: the raw line.
    Raw,
    /// `{"type": "output", "data": "<line>"}`, for the jhansi 0.1.7 SDK.
    Json,
}

pub(crate) fn output_frame(line: &str, format: OutputFormat) -> String {
    match format {
        OutputFormat::Raw => format!("event: output\ndata: {line}\n\n"),
        OutputFormat::Json => {
            let data = line.strip_suffix('\n').unwrap_or(line);
            let payload = pyjson::to_string(&json!({ "type": "output", "data": data }));
            format!("event: output\ndata: {payload}\n\n")
        }
    }
}

pub(crate) fn done_frame(done: &DoneInfo) -> String {
    format!("event: done\ndata: {}\n\n", pyjson::to_string(done))
}

const KEEPALIVE: &str = ": keepalive\n\n";

/// The `done` sent if the exec task vanished without one (it never should).
fn lost_done() -> DoneInfo {
    DoneInfo::failed(
        String::new(),
        1,
        RunStatus::Failed,
        "internal error: the exec ended without a result".into(),
    )
}

/// One `install` event: installer progress, a separate event type old clients ignore.
pub(crate) fn install_frame(line: &str) -> String {
    named_frame("install", line)
}

/// A line of another channel (`install`, `server`), raw: old clients ignore unknown events.
fn named_frame(event: &str, line: &str) -> String {
    format!(
        "event: {event}\ndata: {}\n\n",
        line.strip_suffix('\n').unwrap_or(line)
    )
}

/// Turns an exec stream into an SSE response.
pub fn response(stream: ExecStream, format: OutputFormat, keepalive: Duration) -> Response {
    let frames = futures_util::stream::unfold(Some(stream), move |state| async move {
        let mut stream = state?;
        let frame = tokio::select! {
            event = stream.recv() => match event {
                Some(ExecEvent::Output(line)) => return Some((frame_ok(output_frame(&line, format)), Some(stream))),
                Some(ExecEvent::Install(line)) => return Some((frame_ok(install_frame(&line)), Some(stream))),
                Some(ExecEvent::Server(line)) => return Some((frame_ok(named_frame("server", &line)), Some(stream))),
                Some(ExecEvent::Done(done)) => done_frame(&done),
                None => done_frame(&lost_done()),
            },
            () = tokio::time::sleep(keepalive) => return Some((frame_ok(KEEPALIVE.to_string()), Some(stream))),
        };
        // `done` ends the stream.
        Some((frame_ok(frame), None))
    });
    let mut response = Body::from_stream(frames).into_response();
    let headers = response.headers_mut();
    headers.insert(
        header::CONTENT_TYPE,
        HeaderValue::from_static("text/event-stream; charset=utf-8"),
    );
    headers.insert(header::CACHE_CONTROL, HeaderValue::from_static("no-cache"));
    headers.insert("x-accel-buffering", HeaderValue::from_static("no"));
    response
}

fn frame_ok(frame: String) -> Result<Bytes, std::convert::Infallible> {
    Ok(Bytes::from(frame))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn install_frame_has_no_trailing_newline() {
        assert_eq!(
            install_frame("Resolved 1 package\n"),
            "event: install\ndata: Resolved 1 package\n\n"
        );
    }

    #[test]
    fn frames_match_v0_11_bytes() {
        assert_eq!(
            output_frame("hello\n", OutputFormat::Raw),
            "event: output\ndata: hello\n\n\n"
        );
        assert_eq!(
            output_frame("c", OutputFormat::Raw),
            "event: output\ndata: c\n\n"
        );
        assert_eq!(
            output_frame("say \"hi\" é\n", OutputFormat::Json),
            "event: output\ndata: {\"type\": \"output\", \"data\": \"say \\\"hi\\\" \\u00e9\"}\n\n"
        );
        let mut done = DoneInfo::failed("run_1".into(), 3, RunStatus::Failed, "unknown".into());
        done.duration_ms = 30;
        assert!(done_frame(&done).starts_with(
            "event: done\ndata: {\"exit_code\": 3, \"duration_ms\": 30, \"output\": \"\", \"error\": \"unknown\", \"run_id\": \"run_1\", \"status\": \"failed\""
        ));
        assert!(
            done_frame(&done).ends_with("\"oom_killed\": false}\n\n"),
            "no install key without a plan"
        );
        install_frame_has_no_trailing_newline();
    }
}
