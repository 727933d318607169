//! A small client of the HTTP API for the CLI: JSON requests with errors that name the
//! server's answer, multipart uploads, and the exec SSE stream read event by event.

use futures_util::StreamExt;
use serde_json::{Value, json};

/// Failures talking to the server, each naming what was asked.
#[derive(Debug)]
pub enum ClientError {
    /// The server could not be reached at all.
    Unreachable { url: String, reason: String },
    /// The server answered with an error status.
    Refused {
        what: String,
        status: u16,
        detail: String,
    },
    /// The answer was not what the API promises.
    Protocol(String),
}

impl std::fmt::Display for ClientError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Self::Unreachable { url, reason } => {
                write!(
                    f,
                    "cannot reach the server at {url}: {reason} (is `petri serve` running? see --url / PETRI_URL)"
                )
            }
            Self::Refused {
                what,
                status,
                detail,
            } => write!(f, "{what}: the server answered {status}: {detail}"),
            Self::Protocol(message) => write!(f, "unexpected answer from the server: {message}"),
        }
    }
}

/// One event of an exec stream.
#[derive(Debug, Clone, PartialEq)]
pub enum ExecEvent {
    Output(String),
    Install(String),
    Done(Value),
}

pub struct Client {
    base: String,
    http: reqwest::Client,
}

impl Client {
    pub fn new(base: &str) -> Self {
        Self {
            base: base.trim_end_matches('/').to_string(),
            http: reqwest::Client::new(),
        }
    }

    fn url(&self, path: &str) -> String {
        format!("{}{path}", self.base)
    }

    async fn send(
        &self,
        what: &str,
        request: reqwest::RequestBuilder,
    ) -> Result<reqwest::Response, ClientError> {
        let response = request.send().await.map_err(|e| ClientError::Unreachable {
            url: self.base.clone(),
            reason: e.to_string(),
        })?;
        let status = response.status();
        if status.is_success() {
            return Ok(response);
        }
        let body = response.text().await.unwrap_or_default();
        let detail = serde_json::from_str::<Value>(&body)
            .ok()
            .and_then(|v| v.get("detail").cloned())
            .map(|d| match d {
                Value::String(s) => s,
                other => other.to_string(),
            })
            .unwrap_or(body);
        Err(ClientError::Refused {
            what: what.to_string(),
            status: status.as_u16(),
            detail,
        })
    }

    async fn json(
        &self,
        what: &str,
        request: reqwest::RequestBuilder,
    ) -> Result<Value, ClientError> {
        let response = self.send(what, request).await?;
        response
            .json()
            .await
            .map_err(|e| ClientError::Protocol(format!("{what}: {e}")))
    }

    pub async fn get(&self, what: &str, path: &str) -> Result<Value, ClientError> {
        self.json(what, self.http.get(self.url(path))).await
    }

    pub async fn create(&self, body: Value) -> Result<Value, ClientError> {
        self.json(
            "creating a sandbox",
            self.http.post(self.url("/v1/sandboxes")).json(&body),
        )
        .await
    }

    pub async fn delete(&self, what: &str, path: &str) -> Result<(), ClientError> {
        self.send(what, self.http.delete(self.url(path))).await?;
        Ok(())
    }

    /// Uploads `content` as `name` (a file, or with `zip` an archive to extract).
    pub async fn upload(
        &self,
        sandbox: &str,
        name: &str,
        content: Vec<u8>,
        zip: bool,
    ) -> Result<Value, ClientError> {
        let part = reqwest::multipart::Part::bytes(content).file_name(name.to_string());
        let form = reqwest::multipart::Form::new().part("file", part);
        let route = if zip { "upload" } else { "files" };
        self.json(
            &format!("uploading {name}"),
            self.http
                .post(self.url(&format!("/v1/sandboxes/{sandbox}/{route}")))
                .multipart(form),
        )
        .await
    }

    pub async fn download(&self, sandbox: &str, path: &str) -> Result<Vec<u8>, ClientError> {
        let what = format!("downloading {path}");
        let response = self
            .send(
                &what,
                self.http
                    .get(self.url(&format!("/v1/sandboxes/{sandbox}/files/{path}"))),
            )
            .await?;
        let bytes = response
            .bytes()
            .await
            .map_err(|e| ClientError::Protocol(format!("{what}: {e}")))?;
        Ok(bytes.to_vec())
    }

    /// Runs `command`, handing every event to `on_event` as it arrives; returns the `done`
    /// payload.
    pub async fn exec(
        &self,
        sandbox: &str,
        command: &str,
        timeout: Option<u64>,
        on_event: impl FnMut(&ExecEvent),
    ) -> Result<Value, ClientError> {
        let request = self
            .http
            .post(self.url(&format!("/v1/sandboxes/{sandbox}/exec")))
            .json(&exec_body(command, timeout));
        self.events("running the command", request, on_event).await
    }

    /// Starts `command` detached; returns the process.
    pub async fn start(
        &self,
        sandbox: &str,
        command: &str,
        timeout: Option<u64>,
    ) -> Result<Value, ClientError> {
        let mut body = exec_body(command, timeout);
        body["background"] = json!(true);
        let request = self
            .http
            .post(self.url(&format!("/v1/sandboxes/{sandbox}/exec")))
            .json(&body);
        self.json("starting the process", request).await
    }

    /// Follows a background process's output until it ends; returns the `done` payload.
    pub async fn follow(
        &self,
        sandbox: &str,
        process: &str,
        on_event: impl FnMut(&ExecEvent),
    ) -> Result<Value, ClientError> {
        let path = format!("/v1/sandboxes/{sandbox}/processes/{process}/output");
        let request = self.http.get(self.url(&path));
        self.events("following the process", request, on_event)
            .await
    }

    pub async fn post(&self, what: &str, path: &str, body: Value) -> Result<Value, ClientError> {
        self.json(what, self.http.post(self.url(path)).json(&body))
            .await
    }

    pub async fn delete_json(&self, what: &str, path: &str) -> Result<Value, ClientError> {
        self.json(what, self.http.delete(self.url(path))).await
    }

    /// Reads an SSE stream, handing every event to `on_event`; returns the `done` payload.
    async fn events(
        &self,
        what: &str,
        request: reqwest::RequestBuilder,
        mut on_event: impl FnMut(&ExecEvent),
    ) -> Result<Value, ClientError> {
        let response = self.send(what, request).await?;
        let mut parser = SseParser::default();
        let mut stream = response.bytes_stream();
        while let Some(chunk) = stream.next().await {
            let chunk =
                chunk.map_err(|e| ClientError::Protocol(format!("the stream broke: {e}")))?;
            for event in parser.push(&chunk) {
                on_event(&event);
                if let ExecEvent::Done(done) = event {
                    return Ok(done);
                }
            }
        }
        Err(ClientError::Protocol(
            "the stream ended without a done event".into(),
        ))
    }
}

fn exec_body(command: &str, timeout: Option<u64>) -> Value {
    let mut body = json!({"command": command, "output_format": "raw"});
    if let Some(timeout) = timeout {
        body["timeout"] = json!(timeout);
    }
    body
}

/// Incremental parser of the exec stream (`event:` / `data:` lines, blank line ends an event,
/// `:` comments are keepalives).
#[derive(Debug, Default)]
pub struct SseParser {
    buffer: Vec<u8>,
    event: Option<String>,
    data: Vec<String>,
}

impl SseParser {
    pub fn push(&mut self, chunk: &[u8]) -> Vec<ExecEvent> {
        self.buffer.extend_from_slice(chunk);
        let mut events = Vec::new();
        while let Some(end) = self.buffer.iter().position(|&b| b == b'\n') {
            let line: Vec<u8> = self.buffer.drain(..=end).collect();
            let line = String::from_utf8_lossy(&line[..line.len() - 1]).into_owned();
            let line = line.strip_suffix('\r').unwrap_or(&line).to_string();
            if line.is_empty() {
                if let Some(event) = self.finish_event() {
                    events.push(event);
                }
            } else if let Some(name) = line.strip_prefix("event:") {
                self.event = Some(name.trim().to_string());
            } else if let Some(data) = line.strip_prefix("data:") {
                self.data
                    .push(data.strip_prefix(' ').unwrap_or(data).to_string());
            }
        }
        events
    }

    fn finish_event(&mut self) -> Option<ExecEvent> {
        let name = self.event.take();
        let data = std::mem::take(&mut self.data).join("\n");
        match name.as_deref() {
            Some("output") => Some(ExecEvent::Output(data)),
            Some("install") => Some(ExecEvent::Install(data)),
            Some("done") => serde_json::from_str(&data).ok().map(ExecEvent::Done),
            _ => None,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn events_split_across_chunks_and_keepalives() {
        let mut parser = SseParser::default();
        assert!(parser.push(b": keepalive\n\nevent: out").is_empty());
        let events = parser.push(b"put\ndata: hello\n\nevent: install\r\ndata: pip\r\n\r\nevent: done\ndata: {\"exit_code\": 3}\n\n");
        assert_eq!(
            events,
            [
                ExecEvent::Output("hello".into()),
                ExecEvent::Install("pip".into()),
                ExecEvent::Done(json!({"exit_code": 3})),
            ]
        );
    }
}
