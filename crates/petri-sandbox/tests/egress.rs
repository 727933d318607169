//! The registry-only network profile against the real registry and the real proxy: an exec
//! reaches an allowlisted registry through the proxy, and nothing else: not other hosts, not
//! DNS, not the network directly. Needs root (CI runs as root).

use std::sync::{Arc, Mutex};

use petri_egress::{
    Allowlist, AuditSink, ConnectionEvent, DEFAULT_ALLOWLIST, EgressProxy, PROXY_PORT, ProxyTag,
};
use petri_sandbox::{
    Backend, BwrapBackend, BwrapConfig, Cgroups, ExecSpec, Limits, Network, SandboxSpec,
};
use tokio::io::AsyncReadExt;

#[derive(Debug, Default)]
struct Recorder(Mutex<Vec<ConnectionEvent>>);

impl AuditSink for Recorder {
    fn record(&self, event: ConnectionEvent) {
        self.0.lock().unwrap().push(event);
    }
}

const PROBE: &str = r#"
import os, socket, urllib.request
def fetch(url):
    try:
        return str(urllib.request.urlopen(url, timeout=20).status)
    except Exception as e:
        return type(e).__name__
print("pypi", fetch("https://pypi.org/simple/six/"))
print("github", fetch("https://github.com/"))
try:
    socket.getaddrinfo("pypi.org", 443)
    print("dns leaked")
except OSError:
    print("dns blocked")
try:
    socket.create_connection(("1.1.1.1", 443), timeout=3)
    print("direct leaked")
except OSError as e:
    print("direct blocked", e.errno)
print("proxy", os.environ.get("HTTPS_PROXY"))
"#;

/// A backend (without cgroups) and a sandbox with an empty workspace, in a temp dir.
fn setup(id: &str) -> (tempfile::TempDir, BwrapBackend, SandboxSpec) {
    let dir = tempfile::tempdir().unwrap();
    let workspace = dir.path().join("ws");
    std::fs::create_dir(&workspace).unwrap();
    let ca = "/etc/ssl/certs/ca-certificates.crt".to_string();
    let backend = BwrapBackend::new(BwrapConfig {
        binary: "bwrap".into(),
        runtime_dir: dir.path().join("runtime"),
        tmp_size_bytes: 64 << 20,
        extra_ro_paths: Vec::new(),
        base_env: vec![
            ("SSL_CERT_FILE".into(), ca.clone()),
            ("REQUESTS_CA_BUNDLE".into(), ca),
        ],
        tools: Vec::new(),
        landlock_init: None,
        cgroups: Cgroups::unavailable("test"),
    })
    .unwrap();
    let sandbox = SandboxSpec {
        id: id.into(),
        workspace,
        limits: Limits {
            memory_bytes: 512 << 20,
            pids: 128,
            cpu_millis: 1000,
            disk_bytes: 1 << 30,
        },
        host_uid: None,
    };
    (dir, backend, sandbox)
}

/// Everything the process printed, once it closed its output.
async fn read_all(process: &mut petri_sandbox::Process) -> String {
    let mut output = String::new();
    process
        .take_output()
        .unwrap()
        .read_to_string(&mut output)
        .await
        .unwrap();
    output
}

#[tokio::test]
async fn registry_profile_reaches_only_the_allowlist() {
    let (_dir, backend, sandbox) = setup("sb_egress");
    std::fs::write(sandbox.workspace.join("probe.py"), PROBE).unwrap();
    let exec = ExecSpec {
        command: "python3 /sandbox/probe.py".into(),
        env: Vec::new(),
        network: Network::RegistryProxy { port: PROXY_PORT },
        test: None,
    };
    let mut process = backend.spawn(&sandbox, &exec).unwrap();
    let recorder = Arc::new(Recorder::default());
    let proxy = EgressProxy::new(Allowlist::parse(DEFAULT_ALLOWLIST).unwrap());
    let tag = ProxyTag {
        sandbox_id: "sb_egress".into(),
        run_id: "run_egress".into(),
    };
    let serving = proxy
        .serve(
            process.take_proxy_listener().unwrap(),
            tag,
            recorder.clone(),
        )
        .unwrap();
    let output = read_all(&mut process).await;
    let exit = process.wait().await.unwrap();
    serving.abort();
    assert_eq!(exit.code, 0, "{output}");
    assert!(output.contains("pypi 200"), "{output}");
    assert!(!output.contains("github 200"), "{output}");
    assert!(output.contains("dns blocked"), "{output}");
    assert!(output.contains("direct blocked 101"), "{output}");
    assert!(output.contains("proxy http://127.0.0.1:3128"), "{output}");
    let events = recorder.0.lock().unwrap().clone();
    assert!(
        events
            .iter()
            .any(|e| e.allowed && e.target == "pypi.org:443"),
        "{events:?}"
    );
    assert!(
        events
            .iter()
            .any(|e| !e.allowed && e.target == "github.com:443"),
        "{events:?}"
    );
    assert!(events.iter().all(|e| e.tag.run_id == "run_egress"));
}

#[tokio::test]
async fn default_profile_has_no_proxy_listener() {
    let (_dir, backend, sandbox) = setup("sb_none");
    let exec = ExecSpec {
        command: "python3 -c \"import socket; socket.create_connection(('127.0.0.1', 3128), timeout=2)\" 2>&1 | tail -1".into(),
        env: Vec::new(),
        network: Network::None,
        test: None,
    };
    let mut process = backend.spawn(&sandbox, &exec).unwrap();
    assert!(process.take_proxy_listener().is_none());
    let output = read_all(&mut process).await;
    process.wait().await.unwrap();
    assert!(output.contains("Connection refused"), "{output}");
}
