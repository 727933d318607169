//! Test harness: starts the real `petri` binary on a free port with a fresh state directory,
//! and talks to it over HTTP like any client.

use std::collections::HashMap;
use std::io::{BufRead, BufReader};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use futures_util::StreamExt;
use serde_json::{Value, json};

/// A running server. Killed when dropped.
pub struct TestServer {
    pub url: String,
    pub root: PathBuf,
    child: Option<Child>,
    pub client: reqwest::Client,
    _dir: Option<tempfile::TempDir>,
    env: Vec<(String, String)>,
    pub banner: String,
}

/// How the server process is started.
enum Launch {
    Direct,
    LeakingFd,
    AsNobody(PathBuf),
}

/// One parsed SSE event.
#[derive(Debug, Clone, PartialEq)]
pub struct Event {
    pub name: String,
    pub data: String,
}

/// The whole exec stream.
#[derive(Debug)]
pub struct ExecResult {
    pub status: u16,
    pub raw: String,
    pub events: Vec<Event>,
}

impl ExecResult {
    pub fn done(&self) -> Value {
        let dones: Vec<_> = self.events.iter().filter(|e| e.name == "done").collect();
        assert_eq!(
            dones.len(),
            1,
            "exactly one done event expected in {:?}",
            self.raw
        );
        assert_eq!(
            self.events.last().unwrap().name,
            "done",
            "done must be last: {:?}",
            self.raw
        );
        serde_json::from_str(&dones[0].data).expect("done data is JSON")
    }

    pub fn lines(&self) -> Vec<String> {
        self.events
            .iter()
            .filter(|e| e.name == "output")
            .map(|e| e.data.clone())
            .collect()
    }
}

/// Parses SSE text into events (comments dropped).
pub fn parse_sse(raw: &str) -> Vec<Event> {
    let mut events = Vec::new();
    for block in raw.split("\n\n") {
        let mut name = String::new();
        let mut data: Option<String> = None;
        for line in block.split('\n') {
            if let Some(rest) = line.strip_prefix("event: ") {
                name = rest.to_string();
            } else if let Some(rest) = line.strip_prefix("data: ") {
                data = Some(match data {
                    Some(d) => format!("{d}\n{rest}"),
                    None => rest.to_string(),
                });
            }
        }
        if let Some(data) = data {
            events.push(Event { name, data });
        }
    }
    events
}

/// A temporary directory other users may traverse (not list), as a real state directory's
/// parents are: a root server gives each sandbox its own uid only then.
pub fn traversable_tempdir() -> tempfile::TempDir {
    use std::os::unix::fs::PermissionsExt;
    let dir = tempfile::tempdir().unwrap();
    std::fs::set_permissions(dir.path(), std::fs::Permissions::from_mode(0o711)).unwrap();
    dir
}

pub fn bin() -> &'static str {
    env!("CARGO_BIN_EXE_petri")
}

impl TestServer {
    pub async fn start() -> Self {
        Self::start_with(&[]).await
    }

    pub async fn start_with(env: &[(&str, &str)]) -> Self {
        let dir = traversable_tempdir();
        let root = dir.path().join("state");
        let env: Vec<(String, String)> = env
            .iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect();
        let mut server = Self::spawn(root, env).await;
        server._dir = Some(dir);
        server
    }

    /// Starts the server from a shell that leaves descriptor 7 (a host file) open and
    /// inheritable, as a careless supervisor might.
    pub async fn start_with_leaked_fd() -> Self {
        let dir = traversable_tempdir();
        let root = dir.path().join("state");
        let mut server = Self::spawn_via(root, Vec::new(), Launch::LeakingFd).await;
        server._dir = Some(dir);
        server
    }

    /// Starts the server as the unprivileged user `nobody` (the test itself must be root).
    pub async fn start_as_nobody() -> Self {
        use std::os::unix::fs::PermissionsExt;
        let dir = tempfile::tempdir().unwrap();
        std::fs::set_permissions(dir.path(), std::fs::Permissions::from_mode(0o755)).unwrap();
        // The build directory may sit under a home nobody cannot traverse.
        let binary = dir.path().join("petri");
        std::fs::copy(bin(), &binary).unwrap();
        std::fs::copy(
            env!("CARGO_BIN_EXE_petri-init"),
            dir.path().join("petri-init"),
        )
        .unwrap();
        let root = dir.path().join("state");
        std::fs::create_dir(&root).unwrap();
        Command::new("chown")
            .args(["nobody", root.to_str().unwrap()])
            .status()
            .unwrap();
        // The build's uv may sit where nobody cannot read it: use pip.
        let mut server = Self::spawn_via(
            root,
            vec![
                ("HOME".into(), "/tmp".into()),
                ("PETRI_UV".into(), "none".into()),
            ],
            Launch::AsNobody(binary),
        )
        .await;
        server._dir = Some(dir);
        server
    }

    async fn spawn(root: PathBuf, env: Vec<(String, String)>) -> Self {
        Self::spawn_via(root, env, Launch::Direct).await
    }

    async fn spawn_via(root: PathBuf, env: Vec<(String, String)>, launch: Launch) -> Self {
        let mut command = match launch {
            Launch::Direct => Command::new(bin()),
            Launch::LeakingFd => {
                let mut shell = Command::new("sh");
                shell.args(["-c", "exec 7</etc/hostname; exec \"$0\" \"$@\"", bin()]);
                shell
            }
            Launch::AsNobody(binary) => {
                let mut setpriv = Command::new("setpriv");
                setpriv
                    .args(["--reuid=65534", "--regid=65534", "--clear-groups"])
                    .arg(binary);
                setpriv
            }
        };
        command
            .args(["serve", "--bind", "127.0.0.1:0"])
            .env("PETRI_WORKSPACE_ROOT", &root)
            .env("PETRI_LOG", "warn")
            .stdout(Stdio::piped())
            .stderr(Stdio::inherit());
        for (key, value) in &env {
            command.env(key, value);
        }
        let mut child = command.spawn().expect("petri binary starts");
        let stdout = child.stdout.take().unwrap();
        let banner = tokio::task::spawn_blocking(move || {
            let mut line = String::new();
            BufReader::new(stdout).read_line(&mut line).unwrap();
            line
        })
        .await
        .unwrap();
        let url = banner
            .split_whitespace()
            .find(|w| w.starts_with("http://"))
            .unwrap_or_else(|| panic!("no URL in start-up line {banner:?}"))
            .to_string();
        Self {
            url,
            root,
            child: Some(child),
            client: reqwest::Client::new(),
            _dir: None,
            env,
            banner,
        }
    }

    /// Stops the server with SIGKILL (no chance to clean up) and starts a new one on the same
    /// state directory.
    pub async fn crash_and_restart(mut self) -> Self {
        let mut child = self.child.take().unwrap();
        child.kill().unwrap();
        child.wait().unwrap();
        let dir = self._dir.take();
        let mut next = Self::spawn(self.root.clone(), self.env.clone()).await;
        next._dir = dir;
        next
    }

    /// Sends SIGTERM and waits for a clean exit.
    pub fn terminate(&mut self) -> std::process::ExitStatus {
        let mut child = self.child.take().unwrap();
        Command::new("kill")
            .args(["-TERM", &child.id().to_string()])
            .status()
            .unwrap();
        child.wait().unwrap()
    }

    /// Sends SIGTERM and waits up to `limit` for the exit; past it the server is killed and
    /// `None` returned (a test fails instead of hanging).
    pub fn terminate_within(&mut self, limit: Duration) -> Option<std::process::ExitStatus> {
        let mut child = self.child.take().unwrap();
        Command::new("kill")
            .args(["-TERM", &child.id().to_string()])
            .status()
            .unwrap();
        let deadline = std::time::Instant::now() + limit;
        while std::time::Instant::now() < deadline {
            if let Some(status) = child.try_wait().unwrap() {
                return Some(status);
            }
            std::thread::sleep(Duration::from_millis(50));
        }
        let _ = child.kill();
        let _ = child.wait();
        None
    }

    pub fn url(&self, path: &str) -> String {
        format!("{}{}", self.url, path)
    }

    pub async fn get(&self, path: &str) -> reqwest::Response {
        self.client.get(self.url(path)).send().await.unwrap()
    }

    pub async fn get_json(&self, path: &str) -> (u16, Value) {
        let response = self.get(path).await;
        let status = response.status().as_u16();
        (status, response.json().await.unwrap_or(Value::Null))
    }

    pub async fn post_json(&self, path: &str, body: Value) -> (u16, Value) {
        let response = self
            .client
            .post(self.url(path))
            .json(&body)
            .send()
            .await
            .unwrap();
        let status = response.status().as_u16();
        (status, response.json().await.unwrap_or(Value::Null))
    }

    pub async fn delete(&self, path: &str) -> u16 {
        self.client
            .delete(self.url(path))
            .send()
            .await
            .unwrap()
            .status()
            .as_u16()
    }

    /// Creates a sandbox and returns its id.
    pub async fn create(&self, body: Value) -> String {
        let (status, created) = self.post_json("/v1/sandboxes", body).await;
        assert_eq!(status, 201, "{created}");
        created["id"].as_str().unwrap().to_string()
    }

    pub async fn sandbox(&self) -> String {
        self.create(json!({})).await
    }

    /// Uploads `content` as multipart part `file` named `filename`.
    pub async fn upload(&self, id: &str, filename: &str, content: Vec<u8>) -> (u16, Value) {
        self.multipart(&format!("/v1/sandboxes/{id}/files"), filename, content)
            .await
    }

    pub async fn upload_zip(&self, id: &str, content: Vec<u8>) -> (u16, Value) {
        self.multipart(
            &format!("/v1/sandboxes/{id}/upload"),
            "project.zip",
            content,
        )
        .await
    }

    pub async fn multipart(&self, path: &str, filename: &str, content: Vec<u8>) -> (u16, Value) {
        let part = reqwest::multipart::Part::bytes(content).file_name(filename.to_string());
        let form = reqwest::multipart::Form::new().part("file", part);
        let response = self
            .client
            .post(self.url(path))
            .multipart(form)
            .send()
            .await
            .unwrap();
        let status = response.status().as_u16();
        (status, response.json().await.unwrap_or(Value::Null))
    }

    /// Runs a command and reads the whole stream.
    pub async fn exec(&self, id: &str, command: &str) -> ExecResult {
        self.exec_body(id, json!({ "command": command })).await
    }

    pub async fn exec_body(&self, id: &str, body: Value) -> ExecResult {
        let response = self
            .client
            .post(self.url(&format!("/v1/sandboxes/{id}/exec")))
            .json(&body)
            .send()
            .await
            .unwrap();
        let status = response.status().as_u16();
        let bytes = response.bytes().await.unwrap();
        let raw = String::from_utf8(bytes.to_vec()).expect("the stream is valid UTF-8");
        ExecResult {
            status,
            events: parse_sse(&raw),
            raw,
        }
    }

    /// Runs a command and records when each chunk arrived, relative to the request.
    pub async fn exec_timed(&self, id: &str, command: &str) -> Vec<(Duration, String)> {
        let start = Instant::now();
        let response = self
            .client
            .post(self.url(&format!("/v1/sandboxes/{id}/exec")))
            .json(&json!({ "command": command }))
            .send()
            .await
            .unwrap();
        let mut stream = response.bytes_stream();
        let mut chunks = Vec::new();
        while let Some(chunk) = stream.next().await {
            chunks.push((
                start.elapsed(),
                String::from_utf8_lossy(&chunk.unwrap()).into_owned(),
            ));
        }
        chunks
    }

    pub async fn runs(&self, id: &str) -> Vec<Value> {
        let (status, runs) = self.get_json(&format!("/v1/sandboxes/{id}/runs")).await;
        assert_eq!(status, 200);
        runs.as_array().unwrap().clone()
    }

    pub fn workspace(&self, id: &str) -> PathBuf {
        self.root.join("sandboxes").join(id)
    }
}

impl Drop for TestServer {
    fn drop(&mut self) {
        if let Some(mut child) = self.child.take() {
            let _ = child.kill();
            let _ = child.wait();
        }
        // Sandboxes' disk filesystems outlive a killed server (as they should); the test
        // owning the directory takes them down so no mount or loop device leaks.
        if let Some(dir) = &self._dir {
            unmount_below(dir.path());
        }
    }
}

/// Lazily unmounts every mount point below `root`.
pub fn unmount_below(root: &Path) {
    let Ok(table) = std::fs::read_to_string("/proc/self/mountinfo") else {
        return;
    };
    for line in table.lines() {
        let Some(point) = line.split(' ').nth(4) else {
            continue;
        };
        let point = point.replace("\\040", " ");
        if Path::new(&point).starts_with(root) {
            let _ = Command::new("umount").arg("-l").arg(&point).status();
        }
    }
}

/// Builds a zip in memory from `(name, content)` pairs.
pub fn zip_of(entries: &[(&str, &[u8])]) -> Vec<u8> {
    use std::io::Write;
    let mut buffer = std::io::Cursor::new(Vec::new());
    {
        let mut writer = zip::ZipWriter::new(&mut buffer);
        let options = zip::write::SimpleFileOptions::default()
            .compression_method(zip::CompressionMethod::Deflated);
        for (name, content) in entries {
            if name.ends_with('/') {
                writer.add_directory(*name, options).unwrap();
            } else {
                writer.start_file(*name, options).unwrap();
                writer.write_all(content).unwrap();
            }
        }
        writer.finish().unwrap();
    }
    buffer.into_inner()
}

/// Polls `check` until it returns true or `timeout` passes.
pub async fn eventually(timeout: Duration, mut check: impl AsyncFnMut() -> bool) -> bool {
    let deadline = Instant::now() + timeout;
    while Instant::now() < deadline {
        if check().await {
            return true;
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    false
}

/// Whether a host process with `marker` in its command line exists.
pub fn host_process_with(marker: &str) -> bool {
    let Ok(entries) = std::fs::read_dir("/proc") else {
        return false;
    };
    entries.flatten().any(|entry| {
        std::fs::read(entry.path().join("cmdline"))
            .map(|cmd| String::from_utf8_lossy(&cmd).contains(marker))
            .unwrap_or(false)
    })
}

#[allow(dead_code)]
pub fn exists(path: &Path) -> bool {
    std::fs::symlink_metadata(path).is_ok()
}

#[allow(dead_code)]
pub fn env_map(output: &str) -> HashMap<String, String> {
    output
        .lines()
        .filter_map(|l| l.split_once('='))
        .map(|(k, v)| (k.to_string(), v.to_string()))
        .collect()
}

/// A name no other test (or earlier run) uses: for markers and files that must never appear
/// on the host.
pub fn unique(tag: &str) -> String {
    use std::sync::atomic::{AtomicUsize, Ordering};
    static COUNTER: AtomicUsize = AtomicUsize::new(0);
    let nanos = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_nanos();
    format!(
        "petri-test-{tag}-{}-{nanos}-{}",
        std::process::id(),
        COUNTER.fetch_add(1, Ordering::SeqCst)
    )
}

/// Every path below `dir` with its kind and size, never following symlinks: a snapshot to
/// prove an attack changed nothing.
pub fn tree(dir: &Path) -> Vec<(String, &'static str, u64)> {
    fn walk(base: &Path, dir: &Path, out: &mut Vec<(String, &'static str, u64)>) {
        let Ok(entries) = std::fs::read_dir(dir) else {
            return;
        };
        for entry in entries.flatten() {
            let path = entry.path();
            let meta = std::fs::symlink_metadata(&path).unwrap();
            let rel = path
                .strip_prefix(base)
                .unwrap()
                .to_string_lossy()
                .into_owned();
            let kind = if meta.file_type().is_symlink() {
                "symlink"
            } else if meta.is_dir() {
                "dir"
            } else if meta.is_file() {
                "file"
            } else {
                "other"
            };
            out.push((rel, kind, if kind == "file" { meta.len() } else { 0 }));
            if kind == "dir" {
                walk(base, &path, out);
            }
        }
    }
    let mut out = Vec::new();
    walk(dir, dir, &mut out);
    out.sort();
    out
}
