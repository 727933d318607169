//! `petri` subcommands that talk to a running server: sandboxes, commands, files, runs,
//! metrics, and project folders (`watch` / `exec` without a sandbox id).

mod client;
mod project;

use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::ExitCode;

use clap::{Args, Subcommand};
use serde_json::{Value, json};

use self::client::{Client, ClientError, ExecEvent};
use self::project::{Project, STATE_FILE};

/// Where the server is.
#[derive(Debug, Clone, Args)]
pub struct Server {
    /// The server's base URL.
    #[arg(long, env = "PETRI_URL", default_value = "http://127.0.0.1:8000")]
    url: String,
}

#[derive(Debug, Subcommand)]
pub enum Remote {
    /// Create a sandbox and print its id.
    Create {
        #[command(flatten)]
        server: Server,
        #[arg(long, default_value = "python")]
        language: String,
        /// Which agent or tool is asking (shown in metrics).
        #[arg(long)]
        agent: Option<String>,
        #[arg(long, default_value = "petri-cli")]
        created_by: String,
        #[arg(long)]
        memory_mb: Option<u64>,
        #[arg(long)]
        disk_mb: Option<u64>,
    },
    /// List live sandboxes.
    Ls {
        #[command(flatten)]
        server: Server,
    },
    /// Run a command and stream its output; exits with the command's exit code. Without
    /// `--sandbox`, runs in the sandbox of the watched folder around the current directory,
    /// after sending what changed.
    Exec {
        #[command(flatten)]
        server: Server,
        /// The sandbox (default: the watched folder's).
        #[arg(short, long)]
        sandbox: Option<String>,
        /// Seconds before the command is killed (server default otherwise).
        #[arg(long)]
        timeout: Option<u64>,
        /// Start it detached and print its process id (see `ps`, `logs`, `kill`).
        #[arg(short, long)]
        background: bool,
        /// The command (run with `sh -c`; several words are joined with spaces).
        #[arg(required = true, trailing_var_arg = true)]
        command: Vec<String>,
    },
    /// List a sandbox's background processes.
    Ps {
        #[command(flatten)]
        server: Server,
        sandbox: String,
    },
    /// Print a background process's output from its start and follow it until it ends;
    /// exits with its exit code.
    Logs {
        #[command(flatten)]
        server: Server,
        sandbox: String,
        process: String,
    },
    /// Stop a background process: SIGKILL to its whole tree, or `--signal`.
    Kill {
        #[command(flatten)]
        server: Server,
        sandbox: String,
        process: String,
        /// A signal name or number (TERM, INT, HUP, USR1...) instead of killing.
        #[arg(short, long)]
        signal: Option<String>,
    },
    /// Upload a file, a zip (extracted), or a directory (zipped, honouring .gitignore).
    Upload {
        #[command(flatten)]
        server: Server,
        sandbox: String,
        path: PathBuf,
        /// The name in the sandbox, for a single file (default: its file name).
        #[arg(long = "as")]
        name: Option<String>,
    },
    /// Download a file from a sandbox (to stdout, or `--output`).
    Download {
        #[command(flatten)]
        server: Server,
        sandbox: String,
        path: String,
        #[arg(short, long)]
        output: Option<PathBuf>,
    },
    /// List a sandbox's runs, newest first.
    Runs {
        #[command(flatten)]
        server: Server,
        sandbox: String,
    },
    /// Delete a sandbox (its history stays).
    Rm {
        #[command(flatten)]
        server: Server,
        sandbox: String,
    },
    /// Print the server's metrics.
    Metrics {
        #[command(flatten)]
        server: Server,
    },
    /// Tie a folder to a new sandbox and upload it (state in DIR/.petri-sandbox).
    Watch {
        #[command(flatten)]
        server: Server,
        #[arg(default_value = ".")]
        dir: PathBuf,
        /// Default: from the folder's manifests (package.json, go.mod, pom.xml...).
        #[arg(long)]
        language: Option<String>,
    },
    /// Delete the watched folder's sandbox and forget it.
    Unwatch {
        #[command(flatten)]
        server: Server,
        #[arg(default_value = ".")]
        dir: PathBuf,
    },
}

/// Runs a client subcommand.
pub fn run(command: Remote) -> ExitCode {
    let runtime = match tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
    {
        Ok(runtime) => runtime,
        Err(e) => return fail(&format!("cannot start: {e}")),
    };
    match runtime.block_on(dispatch(command)) {
        Ok(code) => code,
        Err(message) => fail(&message),
    }
}

fn fail(message: &str) -> ExitCode {
    eprintln!("petri: {message}");
    ExitCode::FAILURE
}

fn err(e: ClientError) -> String {
    e.to_string()
}

async fn dispatch(command: Remote) -> Result<ExitCode, String> {
    match command {
        Remote::Create {
            server,
            language,
            agent,
            created_by,
            memory_mb,
            disk_mb,
        } => {
            let mut body = json!({"language": language, "created_by": created_by});
            for (key, value) in [
                ("agent", agent.map(Value::from)),
                ("memory_mb", memory_mb.map(Value::from)),
                ("disk_mb", disk_mb.map(Value::from)),
            ] {
                if let Some(value) = value {
                    body[key] = value;
                }
            }
            let created = Client::new(&server.url).create(body).await.map_err(err)?;
            println!("{}", created["id"].as_str().unwrap_or_default());
        }
        Remote::Ls { server } => {
            let list = Client::new(&server.url)
                .get("listing sandboxes", "/v1/sandboxes")
                .await
                .map_err(err)?;
            println!(
                "{:<36}  {:<8}  {:<8}  {:<27}  AGENT",
                "ID", "LANGUAGE", "STATUS", "CREATED"
            );
            for sandbox in list.as_array().into_iter().flatten() {
                let field = |name: &str| sandbox[name].as_str().unwrap_or("-").to_string();
                println!(
                    "{:<36}  {:<8}  {:<8}  {:<27}  {}",
                    field("id"),
                    field("language"),
                    field("status"),
                    field("created_at"),
                    field("agent")
                );
            }
        }
        Remote::Exec {
            server,
            sandbox,
            timeout,
            background,
            command,
        } => {
            let client = Client::new(&server.url);
            let sandbox = match sandbox {
                Some(sandbox) => sandbox,
                None => sync_project(&client).await?,
            };
            if background {
                let process = client
                    .start(&sandbox, &command.join(" "), timeout)
                    .await
                    .map_err(err)?;
                println!("{}", process["id"].as_str().unwrap_or_default());
                return Ok(ExitCode::SUCCESS);
            }
            return exec(&client, &sandbox, &command.join(" "), timeout).await;
        }
        Remote::Ps { server, sandbox } => {
            let processes = Client::new(&server.url)
                .get(
                    "listing processes",
                    &format!("/v1/sandboxes/{sandbox}/processes"),
                )
                .await
                .map_err(err)?;
            println!(
                "{:<22}  {:<11}  {:>4}  {:>10}  COMMAND",
                "PROCESS", "STATUS", "EXIT", "OUTPUT"
            );
            for process in processes.as_array().into_iter().flatten() {
                println!(
                    "{:<22}  {:<11}  {:>4}  {:>10}  {}",
                    process["id"].as_str().unwrap_or("-"),
                    process["status"].as_str().unwrap_or("-"),
                    process["exit_code"]
                        .as_i64()
                        .map_or("-".to_string(), |c| c.to_string()),
                    process["output_bytes"].as_u64().unwrap_or(0),
                    process["command"].as_str().unwrap_or(""),
                );
            }
        }
        Remote::Logs {
            server,
            sandbox,
            process,
        } => {
            let client = Client::new(&server.url);
            let mut stdout = std::io::stdout();
            let done = client
                .follow(&sandbox, &process, |event| print_event(&mut stdout, event))
                .await
                .map_err(err)?;
            return Ok(exit_code_of(&done));
        }
        Remote::Kill {
            server,
            sandbox,
            process,
            signal,
        } => {
            let client = Client::new(&server.url);
            let path = format!("/v1/sandboxes/{sandbox}/processes/{process}");
            let answer = match signal {
                Some(signal) => {
                    client
                        .post(
                            "signalling the process",
                            &format!("{path}/signal"),
                            json!({ "signal": signal }),
                        )
                        .await
                }
                None => client.delete_json("killing the process", &path).await,
            }
            .map_err(err)?;
            println!(
                "{} {}",
                answer["id"].as_str().unwrap_or_default(),
                answer["status"].as_str().unwrap_or_default()
            );
        }
        Remote::Upload {
            server,
            sandbox,
            path,
            name,
        } => {
            let client = Client::new(&server.url);
            let answer = upload(&client, &sandbox, &path, name).await?;
            println!("{answer}");
        }
        Remote::Download {
            server,
            sandbox,
            path,
            output,
        } => {
            let bytes = Client::new(&server.url)
                .download(&sandbox, &path)
                .await
                .map_err(err)?;
            match output {
                Some(file) => std::fs::write(&file, bytes)
                    .map_err(|e| format!("cannot write {}: {e}", file.display()))?,
                None => std::io::stdout()
                    .write_all(&bytes)
                    .map_err(|e| format!("cannot write to stdout: {e}"))?,
            }
        }
        Remote::Runs { server, sandbox } => {
            let runs = Client::new(&server.url)
                .get("listing runs", &format!("/v1/sandboxes/{sandbox}/runs"))
                .await
                .map_err(err)?;
            println!(
                "{:<22}  {:<11}  {:>4}  {:>8}  COMMAND",
                "RUN", "STATUS", "EXIT", "MS"
            );
            for run in runs.as_array().into_iter().flatten() {
                println!(
                    "{:<22}  {:<11}  {:>4}  {:>8}  {}",
                    run["id"].as_str().unwrap_or("-"),
                    run["status"].as_str().unwrap_or("-"),
                    run["exit_code"]
                        .as_i64()
                        .map_or("-".into(), |c| c.to_string()),
                    run["duration_ms"]
                        .as_u64()
                        .map_or("-".into(), |d| d.to_string()),
                    run["command"].as_str().unwrap_or("-"),
                );
            }
        }
        Remote::Rm { server, sandbox } => {
            Client::new(&server.url)
                .delete(
                    &format!("deleting {sandbox}"),
                    &format!("/v1/sandboxes/{sandbox}"),
                )
                .await
                .map_err(err)?;
            println!("deleted {sandbox}");
        }
        Remote::Metrics { server } => {
            let metrics = Client::new(&server.url)
                .get("reading metrics", "/v1/metrics")
                .await
                .map_err(err)?;
            println!(
                "{}",
                serde_json::to_string_pretty(&metrics).unwrap_or_default()
            );
        }
        Remote::Watch {
            server,
            dir,
            language,
        } => {
            let dir = absolute(&dir)?;
            let client = Client::new(&server.url);
            let language = language.unwrap_or_else(|| project::detect_language(&dir).into());
            let project = watch(&client, &dir, &language).await?;
            println!("{}", project.sandbox);
        }
        Remote::Unwatch { server, dir } => {
            let dir = absolute(&dir)?;
            let Some(project) = Project::find(&dir)? else {
                return Err(format!("{} is not watched", dir.display()));
            };
            let client = Client::new(&server.url);
            match client
                .delete(
                    "deleting the sandbox",
                    &format!("/v1/sandboxes/{}", project.sandbox),
                )
                .await
            {
                Ok(()) | Err(ClientError::Refused { status: 404, .. }) => {}
                Err(e) => return Err(e.to_string()),
            }
            let state = project.dir.join(STATE_FILE);
            std::fs::remove_file(&state)
                .map_err(|e| format!("cannot remove {}: {e}", state.display()))?;
            println!("deleted {}", project.sandbox);
        }
    }
    Ok(ExitCode::SUCCESS)
}

fn absolute(dir: &Path) -> Result<PathBuf, String> {
    std::fs::canonicalize(dir).map_err(|e| format!("cannot open {}: {e}", dir.display()))
}

/// Streams a command's output (program lines to stdout, installer lines to stderr) and
/// returns its exit code.
async fn exec(
    client: &Client,
    sandbox: &str,
    command: &str,
    timeout: Option<u64>,
) -> Result<ExitCode, String> {
    let mut stdout = std::io::stdout();
    let done = client
        .exec(sandbox, command, timeout, |event| {
            print_event(&mut stdout, event)
        })
        .await
        .map_err(err)?;
    Ok(exit_code_of(&done))
}

fn print_event(stdout: &mut std::io::Stdout, event: &ExecEvent) {
    match event {
        ExecEvent::Output(line) => {
            let _ = writeln!(stdout, "{line}");
            let _ = stdout.flush();
        }
        ExecEvent::Install(line) => eprintln!("[install] {line}"),
        ExecEvent::Done(_) => {}
    }
}

/// The command's exit code as ours, saying why when it failed.
fn exit_code_of(done: &Value) -> ExitCode {
    let code = done["exit_code"].as_i64().unwrap_or(1);
    if code != 0
        && let Some(error) = done["error"].as_str()
    {
        eprintln!("petri: {error} (exit code {code})");
    }
    ExitCode::from(u8::try_from(code).unwrap_or(1))
}

async fn upload(
    client: &Client,
    sandbox: &str,
    path: &Path,
    name: Option<String>,
) -> Result<Value, String> {
    if path.is_dir() {
        let dir = absolute(path)?;
        let files: Vec<String> = project::scan(&dir)?.into_keys().collect();
        let zip = project::zip_files(&dir, &files)?;
        return client
            .upload(sandbox, "folder.zip", zip, true)
            .await
            .map_err(err);
    }
    let content =
        std::fs::read(path).map_err(|e| format!("cannot read {}: {e}", path.display()))?;
    let file_name = path
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_default();
    let is_zip = name.is_none() && file_name.to_ascii_lowercase().ends_with(".zip");
    let name = name.unwrap_or(file_name);
    client
        .upload(sandbox, &name, content, is_zip)
        .await
        .map_err(err)
}

/// Creates a sandbox for `dir`, sends the whole folder and records it.
async fn watch(client: &Client, dir: &Path, language: &str) -> Result<Project, String> {
    let created = client
        .create(json!({"language": language, "agent": "petri-cli", "created_by": "petri-cli"}))
        .await
        .map_err(err)?;
    let mut project = Project {
        dir: dir.to_path_buf(),
        sandbox: created["id"].as_str().unwrap_or_default().to_string(),
        language: language.to_string(),
        synced: Default::default(),
    };
    send_changes(client, &mut project).await?;
    Ok(project)
}

/// The watched folder's sandbox, brought up to date with the folder (recreated if it is gone).
async fn sync_project(client: &Client) -> Result<String, String> {
    let cwd = std::env::current_dir().map_err(|e| format!("no current directory: {e}"))?;
    let Some(mut project) = Project::find(&cwd)? else {
        return Err(format!(
            "{} is not in a watched folder: pass --sandbox, or run `petri watch` first",
            cwd.display()
        ));
    };
    let status = client
        .get(
            "checking the sandbox",
            &format!("/v1/sandboxes/{}", project.sandbox),
        )
        .await;
    match status {
        Ok(_) => send_changes(client, &mut project).await?,
        Err(ClientError::Refused { status: 404, .. }) => {
            eprintln!(
                "petri: sandbox {} is gone; creating a new one",
                project.sandbox
            );
            project = watch(client, &project.dir, &project.language).await?;
        }
        Err(e) => return Err(e.to_string()),
    }
    Ok(project.sandbox)
}

/// Sends changed files in one zip and deletes removed ones, then records the new state.
async fn send_changes(client: &Client, project: &mut Project) -> Result<(), String> {
    let now = project::scan(&project.dir)?;
    let (changed, removed) = project::changes(&project.synced, &now);
    if !changed.is_empty() {
        let zip = project::zip_files(&project.dir, &changed)?;
        client
            .upload(&project.sandbox, "changes.zip", zip, true)
            .await
            .map_err(err)?;
    }
    for path in &removed {
        match client
            .delete(
                &format!("deleting {path}"),
                &format!("/v1/sandboxes/{}/files/{path}", project.sandbox),
            )
            .await
        {
            Ok(()) | Err(ClientError::Refused { status: 404, .. }) => {}
            Err(e) => return Err(e.to_string()),
        }
    }
    project.synced = now;
    project.save()
}
