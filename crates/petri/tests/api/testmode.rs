//! Test mode's in-sandbox half, `petri-init --serve`, run on the host in a network namespace
//! of its own (as in a sandbox, only what the server opens listens there; needs root, as CI
//! is): readiness by port or HTTP path, scripts that finish first, setup failures, and the
//! server (with what it started) stopped afterwards.

use std::path::Path;
use std::process::{Command, Output};

use crate::helpers::*;

fn init() -> &'static str {
    env!("CARGO_BIN_EXE_petri-init")
}

/// Runs `petri-init --serve serve ... -- sh -c tests` with the server's output in a file.
fn test_mode(dir: &Path, serve: &str, extra: &[&str], tests: &str) -> (Output, String) {
    let server_log = dir.join("server.log");
    std::fs::write(&server_log, "").unwrap();
    let out = Command::new("unshare")
        .args([
            "--net",
            "--",
            "sh",
            "-c",
            "ip link set lo up && exec \"$0\" \"$@\"",
        ])
        .arg(init())
        .arg("--write")
        .arg(dir)
        .args(["--serve", serve, "--server-output"])
        .arg(&server_log)
        .args(extra)
        .args(["--", "/bin/sh", "-c", tests])
        .current_dir(dir)
        .output()
        .unwrap();
    (out, std::fs::read_to_string(&server_log).unwrap())
}

/// A port number for the server (its own network namespace has every port free).
const PORT: &str = "8765";

#[test]
fn the_tests_run_once_the_server_answers_and_the_server_is_stopped_after() {
    let dir = tempfile::tempdir().unwrap();
    let port = PORT;
    let marker = format!("petri-testmode-{}", std::process::id());
    // The server leaves a background child carrying the marker: it must be stopped too.
    let serve = format!(
        "sh -c 'sleep 300; true {marker}' & exec python3 -m http.server {port} --bind 127.0.0.1"
    );
    let tests =
        format!("curl -s -o /dev/null -w '%{{http_code}}\\n' http://127.0.0.1:{port}/; exit 3");
    let (out, server) = test_mode(
        dir.path(),
        &serve,
        // No port given: the first one the server listens on.
        &["--ready-path", "/", "--ready-timeout", "20"],
        &tests,
    );
    assert_eq!(out.status.code(), Some(3), "the runner's code: {out:?}");
    assert_eq!(String::from_utf8_lossy(&out.stdout), "200\n");
    assert!(
        server.contains(&format!("[petri] ready on port {port}")),
        "{server}"
    );
    assert!(
        server.contains("GET / HTTP"),
        "the server's own output is kept: {server}"
    );
    assert!(
        !host_process_with(&marker),
        "the server is stopped afterwards"
    );
}

#[test]
fn a_script_that_ends_before_listening_still_gets_tested() {
    let dir = tempfile::tempdir().unwrap();
    let (out, server) = test_mode(
        dir.path(),
        "echo built > artifact.txt",
        &["--ready-timeout", "10"],
        "cat artifact.txt",
    );
    assert_eq!(out.status.code(), Some(0), "{out:?}");
    assert_eq!(String::from_utf8_lossy(&out.stdout), "built\n");
    assert!(server.contains("exited 0 before listening"), "{server}");
}

#[test]
fn setup_failures_end_with_a_clear_reason_and_no_tests() {
    let dir = tempfile::tempdir().unwrap();
    let (crashed, _) = test_mode(dir.path(), "echo boom >&2; exit 7", &[], "touch tested");
    assert_eq!(crashed.status.code(), Some(125));
    assert!(
        String::from_utf8_lossy(&crashed.stderr).contains("exited with code 7 before it was ready"),
        "{crashed:?}"
    );
    let port = PORT;
    let (silent, _) = test_mode(
        dir.path(),
        "python3 -m http.server 9999 --bind 127.0.0.1",
        &["--ready-port", port, "--ready-timeout", "2"],
        "touch tested",
    );
    assert_eq!(silent.status.code(), Some(125));
    assert!(
        String::from_utf8_lossy(&silent.stderr)
            .contains(&format!("did not listen on port {port} within 2 s")),
        "{silent:?}"
    );
    assert!(!dir.path().join("tested").exists(), "no tests ran");
}
