//! Attack suite: each module runs one attack as sandboxed code through the public HTTP API,
//! asserts the specific way it was contained, then asserts that the server and a bystander
//! sandbox created before the attack are unaffected.
//!
//! Runs the real server binary (root is needed for cgroup limits; CI runs as root).

#[allow(dead_code)]
#[path = "../api/helpers.rs"]
mod helpers;

mod bpf;
mod cloud_metadata;
mod connect_server_port;
mod cpu_spin;
mod disk_fill;
mod dns_lookup;
mod fork_bomb;
mod hardlink_tricks;
mod host_proc_environ;
mod keyctl;
mod kill_outside;
mod lan_connect;
mod leftover_daemons;
mod many_tiny_files;
mod memory_bomb;
mod mount;
mod output_flood;
mod ptrace_sibling;
mod raw_socket;
mod read_database;
mod read_other_workspace;
mod read_run_logs;
mod read_shadow;
mod setuid_binary;
mod signal_server;
mod symlink_tricks;
mod sysfs;
mod unshare;
mod write_outside_workspace;

use std::time::Duration;

use serde_json::{Value, json};

use crate::helpers::*;

/// What the bystander keeps in its workspace: must survive every attack byte for byte.
fn bystander_file(id: &str) -> String {
    format!("bystander {id} keeps this\n")
}

/// Creates the bystander sandbox (before the attack) with a file in its workspace.
pub(crate) async fn bystander(server: &TestServer) -> String {
    let id = server.sandbox().await;
    let (status, body) = server
        .upload(&id, "keep.txt", bystander_file(&id).into_bytes())
        .await;
    assert_eq!(status, 201, "{body}");
    id
}

/// The shared "contained" check after an attack: the server answers `/health`, and the
/// bystander sandbox still runs code and still holds its file (seen from inside, through the
/// API and on the host).
pub(crate) async fn assert_unaffected(server: &TestServer, bystander: &str) {
    let health = tokio::time::timeout(Duration::from_secs(10), server.get_json("/health"))
        .await
        .expect("/health did not answer within 10 s after the attack");
    assert_eq!(health.0, 200, "/health after the attack: {}", health.1);

    let result = tokio::time::timeout(Duration::from_secs(30), server.exec(bystander, "echo ok"))
        .await
        .expect("the bystander's exec did not finish within 30 s after the attack");
    assert_eq!(result.status, 200, "{}", result.raw);
    let done = result.done();
    assert_eq!(done["output"], "ok\n", "bystander after the attack: {done}");
    assert_eq!(done["exit_code"], 0, "{done}");
    assert_eq!(done["status"], "succeeded", "{done}");

    let expected = bystander_file(bystander);
    let done = server.exec(bystander, "cat /sandbox/keep.txt").await.done();
    assert_eq!(
        done["output"],
        expected.as_str(),
        "bystander's file: {done}"
    );
    let response = server
        .get(&format!("/v1/sandboxes/{bystander}/files/keep.txt"))
        .await;
    assert_eq!(response.status().as_u16(), 200);
    assert_eq!(response.text().await.unwrap(), expected);
    assert_eq!(
        std::fs::read_to_string(server.workspace(bystander).join("keep.txt")).unwrap(),
        expected
    );
}

/// Runs a shell command in the sandbox and returns its `done` event, whatever the exit code.
pub(crate) async fn run(server: &TestServer, id: &str, command: &str) -> Value {
    let result = server.exec(id, command).await;
    assert_eq!(result.status, 200, "{command}: {}", result.raw);
    result.done()
}

/// Runs a shell command in the sandbox, requires success and returns its output.
pub(crate) async fn sh(server: &TestServer, id: &str, command: &str) -> String {
    let done = run(server, id, command).await;
    assert_eq!(done["exit_code"], 0, "{command}: {done}");
    done["output"].as_str().unwrap_or_default().to_string()
}

/// Uploads `script` as `attack.py`, runs it with python3, requires success and returns its
/// output.
pub(crate) async fn python(server: &TestServer, id: &str, script: &str) -> String {
    let (status, body) = server
        .upload(id, "attack.py", script.as_bytes().to_vec())
        .await;
    assert_eq!(status, 201, "{body}");
    sh(server, id, "python3 /sandbox/attack.py").await
}

/// Prelude for python attacks: `call(name, nr, *args)` prints `name result ERRNO`.
pub(crate) const SYSCALL_PRELUDE: &str = r#"
import ctypes, errno
libc = ctypes.CDLL(None, use_errno=True)
def call(name, nr, *args):
    ctypes.set_errno(0)
    result = libc.syscall(nr, *[ctypes.c_long(a) for a in args])
    print(name, result, errno.errorcode.get(ctypes.get_errno(), ctypes.get_errno()))
"#;

/// The server process's host pid, found by the state root it was started with.
pub(crate) fn server_pid(server: &TestServer) -> u32 {
    let needle = format!("PETRI_WORKSPACE_ROOT={}", server.root.display());
    std::fs::read_dir("/proc")
        .unwrap()
        .flatten()
        .filter_map(|entry| entry.file_name().to_str()?.parse::<u32>().ok())
        .find(|pid| {
            let exe = std::fs::read_link(format!("/proc/{pid}/exe")).ok();
            let environ = std::fs::read(format!("/proc/{pid}/environ")).unwrap_or_default();
            exe.is_some_and(|exe| exe.ends_with("petri"))
                && environ
                    .split(|b| *b == 0)
                    .any(|var| var == needle.as_bytes())
        })
        .expect("the server's host process")
}

/// A field of the server's `/proc/<pid>/status` in KiB (VmRSS, VmHWM).
pub(crate) fn server_memory_kib(server: &TestServer, field: &str) -> u64 {
    let status = std::fs::read_to_string(format!("/proc/{}/status", server_pid(server))).unwrap();
    status
        .lines()
        .find_map(|line| line.strip_prefix(&format!("{field}:")))
        .and_then(|rest| rest.split_whitespace().next())
        .and_then(|kib| kib.parse().ok())
        .unwrap_or_else(|| panic!("no {field} in {status}"))
}

/// Asserts an error answer: status and stable `code`.
#[track_caller]
pub(crate) fn assert_error(got: (u16, Value), status: u16, code: &str) -> Value {
    let (got_status, body) = got;
    assert_eq!(got_status, status, "expected {status} {code}, got {body}");
    assert_eq!(body["code"], code, "expected {status} {code}, got {body}");
    body
}

/// Runs `command` with a per-exec timeout.
pub(crate) async fn exec_with_timeout(
    server: &TestServer,
    id: &str,
    command: &str,
    timeout: u64,
) -> ExecResult {
    server
        .exec_body(id, json!({"command": command, "timeout": timeout}))
        .await
}

/// Prelude for python network attacks: `connect(host, port)` prints `host:port RESULT` where
/// RESULT is `connected` or the errno name; `udp(host, port)` does the same for a datagram.
pub(crate) const CONNECT_PRELUDE: &str = r#"
import errno, socket
def connect(host, port):
    try:
        socket.create_connection((host, port), timeout=3).close()
        result = "connected"
    except socket.timeout:
        result = "timeout"
    except OSError as e:
        result = errno.errorcode.get(e.errno, str(e))
    print(f"{host}:{port} {result}")
def udp(host, port):
    family = socket.AF_INET6 if ":" in host else socket.AF_INET
    try:
        socket.socket(family, socket.SOCK_DGRAM).sendto(b"x", (host, port))
        result = "sent"
    except OSError as e:
        result = errno.errorcode.get(e.errno, str(e))
    print(f"udp {host}:{port} {result}")
"#;

/// The host's own non-loopback IPv4 addresses (what `hostname -I` prints).
pub(crate) fn host_addresses() -> Vec<String> {
    let output = std::process::Command::new("hostname")
        .arg("-I")
        .output()
        .map(|o| String::from_utf8_lossy(&o.stdout).into_owned())
        .unwrap_or_default();
    output
        .split_whitespace()
        .filter(|a| {
            a.parse::<std::net::Ipv4Addr>()
                .is_ok_and(|ip| !ip.is_loopback())
        })
        .map(str::to_string)
        .collect()
}

/// The port the server listens on (on the host's loopback).
pub(crate) fn server_port(server: &TestServer) -> u16 {
    server
        .url
        .rsplit(':')
        .next()
        .and_then(|port| port.trim_end_matches('/').parse().ok())
        .unwrap_or_else(|| panic!("no port in {}", server.url))
}
