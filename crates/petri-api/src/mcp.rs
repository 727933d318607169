//! MCP over streamable HTTP at `/mcp`, so an agent connects with no Python at all:
//! `claude mcp add --transport http petri http://localhost:8000/mcp`. The tools call the
//! engine directly; they are the stdio server's (`python -m jhansi.mcp_server`), so agents
//! see the same loop either way.

use std::sync::Arc;

use bytes::Bytes;
use petri_engine::{
    ChunkSource, CreateSandbox, Engine, EngineError, ExecEvent, ExecRequest, FileContent,
};
use rmcp::handler::server::router::tool::ToolRouter;
use rmcp::handler::server::wrapper::Parameters;
use rmcp::transport::streamable_http_server::session::local::LocalSessionManager;
use rmcp::transport::streamable_http_server::{StreamableHttpServerConfig, StreamableHttpService};
use rmcp::{ServerHandler, tool, tool_handler, tool_router};
use schemars::JsonSchema;
use serde::Deserialize;
use tokio::io::AsyncReadExt;

/// Most bytes of a file returned to the agent (its context is precious).
const READ_LIMIT: u64 = 256 * 1024;

/// The `/mcp` service (sessions kept in memory). Only loopback `Host` headers, plus
/// `extra_hosts`, are accepted: a web page cannot reach a local server through DNS rebinding.
pub(crate) fn service(
    engine: Arc<Engine>,
    extra_hosts: &[String],
    shutdown: tokio_util::sync::CancellationToken,
) -> StreamableHttpService<PetriMcp, LocalSessionManager> {
    let mut config = StreamableHttpServerConfig::default();
    config.allowed_hosts.extend(extra_hosts.iter().cloned());
    config.cancellation_token = shutdown;
    StreamableHttpService::new(
        move || Ok(PetriMcp::new(engine.clone())),
        Arc::default(),
        config,
    )
}

#[derive(Debug, Clone)]
pub(crate) struct PetriMcp {
    engine: Arc<Engine>,
    tool_router: ToolRouter<Self>,
}

#[derive(Debug, Deserialize, JsonSchema)]
pub(crate) struct CreateArgs {
    /// python, node, go or java.
    #[serde(default = "python")]
    language: String,
    /// Who is calling, e.g. claude-code, cursor, codex.
    #[serde(default = "unknown")]
    agent: String,
}

fn python() -> String {
    "python".into()
}

fn unknown() -> String {
    "unknown".into()
}

#[derive(Debug, Deserialize, JsonSchema)]
pub(crate) struct ExecArgs {
    sandbox_id: String,
    /// A shell command (run with sh -c in /sandbox).
    command: String,
    /// Seconds before the command is killed (server default otherwise).
    timeout: Option<u64>,
}

impl ExecArgs {
    /// The command to run (`sandbox_id` stays for the call).
    fn request(&self) -> ExecRequest {
        ExecRequest {
            command: self.command.clone(),
            timeout_seconds: self.timeout,
            test: None,
        }
    }
}

#[derive(Debug, Deserialize, JsonSchema)]
pub(crate) struct SandboxArgs {
    sandbox_id: String,
}

#[derive(Debug, Deserialize, JsonSchema)]
pub(crate) struct WriteArgs {
    sandbox_id: String,
    /// Path inside the sandbox (nested paths create directories).
    path: String,
    content: String,
}

#[derive(Debug, Deserialize, JsonSchema)]
pub(crate) struct PathArgs {
    sandbox_id: String,
    /// Path inside the sandbox; empty for the whole workspace.
    #[serde(default)]
    path: String,
}

#[derive(Debug, Deserialize, JsonSchema)]
pub(crate) struct ProcessArgs {
    sandbox_id: String,
    /// The id start_process returned.
    process_id: String,
    /// For stop_process: a signal (TERM, INT, HUP...) instead of killing the whole tree.
    #[serde(default)]
    signal: Option<String>,
}

#[derive(Debug, Deserialize, JsonSchema)]
pub(crate) struct PortArgs {
    sandbox_id: String,
    /// The port the app listens on inside the sandbox.
    port: u16,
    /// Path and query to GET, e.g. /health or /items?page=2.
    #[serde(default = "root_path")]
    path: String,
}

fn root_path() -> String {
    "/".into()
}

/// One in-memory upload.
struct OneChunk(Option<Bytes>);

impl ChunkSource for OneChunk {
    async fn next_chunk(&mut self) -> Result<Option<Bytes>, EngineError> {
        Ok(self.0.take())
    }
}

fn message(error: EngineError) -> String {
    format!("FAILED: {error}")
}

#[tool_router]
impl PetriMcp {
    fn new(engine: Arc<Engine>) -> Self {
        Self {
            engine,
            tool_router: Self::tool_router(),
        }
    }

    #[tool(
        description = "Create a new isolated sandbox (python, node, go or java). Returns the sandbox ID. Pass the agent name, e.g. 'claude-code', 'cursor', 'codex'."
    )]
    async fn create_sandbox(
        &self,
        Parameters(args): Parameters<CreateArgs>,
    ) -> Result<String, String> {
        let view = self
            .engine
            .create_sandbox(CreateSandbox {
                language: args.language,
                created_by: args.agent.clone(),
                agent: Some(args.agent),
                ..CreateSandbox::default()
            })
            .await
            .map_err(message)?;
        Ok(view.record.id)
    }

    #[tool(
        description = "Run a shell command in the sandbox and return its output (newlines kept). Dependencies named in requirements.txt / package.json / go.mod / pom.xml install themselves first. A failed command starts with 'FAILED (exit_code=N): <reason>'."
    )]
    async fn exec_code(&self, Parameters(args): Parameters<ExecArgs>) -> Result<String, String> {
        let mut stream = self
            .engine
            .exec(&args.sandbox_id, args.request())
            .await
            .map_err(message)?;
        while let Some(event) = stream.recv().await {
            if let ExecEvent::Done(done) = event {
                if done.exit_code == 0 {
                    return Ok(done.output);
                }
                let reason = done
                    .error
                    .clone()
                    .unwrap_or_else(|| format!("exit code {}", done.exit_code));
                return Ok(format!(
                    "FAILED (exit_code={}): {reason}\n{}",
                    done.exit_code, done.output
                ));
            }
        }
        Err("FAILED: the command's stream ended without a result".into())
    }

    #[tool(
        description = "Start a long-running command (a dev server, a worker) in the background and return its process id at once. Later commands reach it on 127.0.0.1; fetch_port and the URL /v1/sandboxes/{id}/ports/{port}/ show what it serves. It stops when stopped or when the sandbox goes."
    )]
    async fn start_process(
        &self,
        Parameters(args): Parameters<ExecArgs>,
    ) -> Result<String, String> {
        let process = self
            .engine
            .start_background(&args.sandbox_id, args.request())
            .await
            .map_err(message)?;
        Ok(format!(
            "started {} (read it with process_output, stop it with stop_process)",
            process.id
        ))
    }

    #[tool(description = "A background process's status and its output so far (the last 256 KiB).")]
    async fn process_output(
        &self,
        Parameters(args): Parameters<ProcessArgs>,
    ) -> Result<String, String> {
        let process = self
            .engine
            .process(&args.sandbox_id, &args.process_id)
            .await
            .map_err(message)?;
        let mut output = Vec::new();
        if let Ok(mut file) = self.engine.run_output(&process.id).await {
            use tokio::io::AsyncSeekExt;
            let size = file.metadata().await.map(|m| m.len()).unwrap_or(0);
            let _ = file
                .seek(std::io::SeekFrom::Start(size.saturating_sub(READ_LIMIT)))
                .await;
            let _ = file.take(READ_LIMIT).read_to_end(&mut output).await;
        }
        let state = if process.running {
            "running".to_string()
        } else {
            format!(
                "{} (exit_code={})",
                process.status.as_str(),
                process.exit_code.map_or("-".into(), |c| c.to_string())
            )
        };
        Ok(format!(
            "{}: {state}\n{}",
            process.id,
            String::from_utf8_lossy(&output)
        ))
    }

    #[tool(
        description = "Stop a background process: kill its whole tree, or send `signal` (TERM for a graceful stop)."
    )]
    async fn stop_process(
        &self,
        Parameters(args): Parameters<ProcessArgs>,
    ) -> Result<String, String> {
        let process = match &args.signal {
            Some(signal) => {
                self.engine
                    .signal_process(&args.sandbox_id, &args.process_id, signal)
                    .await
            }
            None => {
                self.engine
                    .kill_process(&args.sandbox_id, &args.process_id)
                    .await
            }
        }
        .map_err(message)?;
        Ok(format!(
            "{}: {}",
            process.id,
            if process.running {
                "signalled, still running"
            } else {
                process.status.as_str()
            }
        ))
    }

    #[tool(
        description = "GET a path from an app listening on a port inside the sandbox; returns the status line and the body (at most 256 KiB)."
    )]
    async fn fetch_port(&self, Parameters(args): Parameters<PortArgs>) -> Result<String, String> {
        let stream = self
            .engine
            .connect_port(&args.sandbox_id, args.port)
            .await
            .map_err(message)?;
        crate::routes::ports::fetch(stream, args.port, &args.path, READ_LIMIT as usize).await
    }

    #[tool(description = "Delete a sandbox and free its resources (its run history stays).")]
    async fn delete_sandbox(
        &self,
        Parameters(args): Parameters<SandboxArgs>,
    ) -> Result<String, String> {
        self.engine
            .delete_sandbox(&args.sandbox_id)
            .await
            .map_err(message)?;
        Ok("deleted".into())
    }

    #[tool(
        description = "Create or replace a file in the sandbox (nested paths create directories)."
    )]
    async fn write_file(&self, Parameters(args): Parameters<WriteArgs>) -> Result<String, String> {
        let size = self
            .engine
            .upload_file(
                &args.sandbox_id,
                &args.path,
                OneChunk(Some(Bytes::from(args.content))),
            )
            .await
            .map_err(message)?;
        Ok(format!("wrote {} ({size} bytes)", args.path))
    }

    #[tool(description = "Read a text file from the sandbox (at most 256 KiB are returned).")]
    async fn read_file(&self, Parameters(args): Parameters<PathArgs>) -> Result<String, String> {
        match self
            .engine
            .read_file(&args.sandbox_id, &args.path)
            .await
            .map_err(message)?
        {
            FileContent::File { file, size } => {
                let mut bytes = Vec::new();
                file.take(READ_LIMIT)
                    .read_to_end(&mut bytes)
                    .await
                    .map_err(|e| format!("FAILED: reading {}: {e}", args.path))?;
                let mut text = String::from_utf8_lossy(&bytes).into_owned();
                if size > READ_LIMIT {
                    text.push_str(&format!(
                        "\n[... {} more bytes not shown]",
                        size - READ_LIMIT
                    ));
                }
                Ok(text)
            }
            FileContent::Dir(_) => Err(format!(
                "FAILED: {} is a directory: use list_files",
                args.path
            )),
        }
    }

    #[tool(
        description = "List the files of the sandbox (or of one directory of it), one per line with its size."
    )]
    async fn list_files(&self, Parameters(args): Parameters<PathArgs>) -> Result<String, String> {
        let path = (!args.path.is_empty()).then_some(args.path.as_str());
        let entries = self
            .engine
            .list_files(&args.sandbox_id, path)
            .await
            .map_err(message)?;
        let lines: Vec<String> = entries
            .iter()
            .map(|entry| match entry.kind {
                "dir" => format!("{}/", entry.path),
                _ => format!("{}  {} bytes", entry.path, entry.size),
            })
            .collect();
        Ok(if lines.is_empty() {
            "(empty)".into()
        } else {
            lines.join("\n")
        })
    }

    #[tool(description = "The sandbox's latest runs: status, exit code, duration and command.")]
    async fn run_history(
        &self,
        Parameters(args): Parameters<SandboxArgs>,
    ) -> Result<String, String> {
        let runs = self.engine.runs(&args.sandbox_id).await.map_err(message)?;
        let lines: Vec<String> = runs
            .iter()
            .take(20)
            .map(|run| {
                format!(
                    "{}  {}  exit={}  {} ms  {}",
                    run.id,
                    run.status.as_str(),
                    run.exit_code.map_or("-".into(), |c| c.to_string()),
                    run.duration_ms.map_or("-".into(), |d| d.to_string()),
                    run.command
                )
            })
            .collect();
        Ok(if lines.is_empty() {
            "no runs yet".into()
        } else {
            lines.join("\n")
        })
    }

    #[tool(
        description = "What the sandbox's latest run had installed: each dependency with its version."
    )]
    async fn install_status(
        &self,
        Parameters(args): Parameters<SandboxArgs>,
    ) -> Result<String, String> {
        let runs = self.engine.runs(&args.sandbox_id).await.map_err(message)?;
        let Some(latest) = runs.first() else {
            return Ok("no runs yet: dependencies install before the first command".into());
        };
        let bom = match self.engine.run_sbom(&latest.id).await {
            Ok(bom) => bom,
            Err(EngineError::SbomNotFound { .. }) => {
                return Ok(
                    "no dependencies installed (no manifest and no third-party imports found)"
                        .into(),
                );
            }
            Err(e) => return Err(message(e)),
        };
        let bom: serde_json::Value = serde_json::from_str(&bom).unwrap_or_default();
        let lines: Vec<String> = bom["components"]
            .as_array()
            .into_iter()
            .flatten()
            .map(|c| {
                format!(
                    "{} {}",
                    c["name"].as_str().unwrap_or("?"),
                    c["version"].as_str().unwrap_or("?")
                )
            })
            .collect();
        Ok(format!("{} installed:\n{}", lines.len(), lines.join("\n")))
    }
}

#[tool_handler(
    router = self.tool_router,
    name = "petri",
    instructions = "Run code in isolated sandboxes: create_sandbox, write_file, exec_code (dependencies install themselves), read_file, start_process / process_output / stop_process for servers, fetch_port to look at what they serve, delete_sandbox."
)]
impl ServerHandler for PetriMcp {}
