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
    // The server's channel is descriptor 3, as bubblewrap hands it over.
    let out = Command::new("unshare")
        .args([
            "--net",
            "--",
            "sh",
            "-c",
            "ip link set lo up && exec \"$0\" \"$@\" 3>\"$SERVER_LOG\"",
        ])
        .env("SERVER_LOG", &server_log)
        .arg(init())
        .arg("--write")
        .arg(dir)
        .args(["--serve", serve, "--server-fd", "3"])
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

/// A folder of the repository as a zip, as a client would upload it.
fn zip_dir(dir: &Path) -> Vec<u8> {
    let mut files = Vec::new();
    let mut pending = vec![dir.to_path_buf()];
    while let Some(current) = pending.pop() {
        for entry in std::fs::read_dir(&current).unwrap().flatten() {
            let path = entry.path();
            if path.is_dir() {
                pending.push(path);
            } else {
                let name = path
                    .strip_prefix(dir)
                    .unwrap()
                    .to_string_lossy()
                    .into_owned();
                files.push((name, std::fs::read(&path).unwrap()));
            }
        }
    }
    let entries: Vec<(&str, &[u8])> = files
        .iter()
        .map(|(name, content)| (name.as_str(), content.as_slice()))
        .collect();
    zip_of(&entries)
}

fn example(name: &str) -> std::path::PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../../examples")
        .join(name)
}

fn events_named(result: &ExecResult, name: &str) -> Vec<String> {
    result
        .events
        .iter()
        .filter(|e| e.name == name)
        .map(|e| e.data.clone())
        .collect()
}

#[tokio::test]
async fn the_flask_example_passes_and_its_failing_variant_fails_through_test_mode() {
    let server = TestServer::start().await;
    let id = server.sandbox().await;
    let (status, _) = server
        .upload_zip(&id, zip_dir(&example("python-flask")))
        .await;
    assert_eq!(status, 201);
    let body = serde_json::json!({
        "command": "python3 app.py", "test": true, "ready_path": "/health", "timeout": 300,
    });
    let passed = server.exec_body(&id, body.clone()).await;
    let done = passed.done();
    assert_eq!(done["exit_code"], 0, "{}", passed.raw);
    assert_eq!(
        done["test"],
        serde_json::json!({"passed": 2, "failed": 0, "skipped": 0, "errors": 0, "runner": "pytest"})
    );
    let output = done["output"].as_str().unwrap();
    assert!(
        output.contains("tests/test_app.py::test_add PASSED"),
        "{output}"
    );
    let server_lines = events_named(&passed, "server");
    assert!(
        server_lines
            .iter()
            .any(|l| l.contains("[petri] ready on port 5000")),
        "{server_lines:?}"
    );
    assert!(
        server_lines.iter().any(|l| l.contains("GET /add/2/3")),
        "the server's own log is streamed apart: {server_lines:?}"
    );
    assert!(
        !output.contains("GET /add/2/3"),
        "and kept out of the runner's output"
    );

    // Recorded like any run, with its verdict and the server's output.
    let run_id = done["run_id"].as_str().unwrap();
    let (_, run) = server.get_json(&format!("/v1/runs/{run_id}")).await;
    assert_eq!(run["test"]["passed"], 2, "{run}");
    let logged = server
        .get(&format!("/v1/runs/{run_id}/server-output"))
        .await
        .text()
        .await
        .unwrap();
    assert!(logged.contains("GET /health"), "{logged}");

    let mut failing = body.clone();
    failing["test_command"] = "python3 -m pytest -v failing".into();
    let failed = server.exec_body(&id, failing).await;
    let done = failed.done();
    assert_eq!(done["exit_code"], 1, "{}", failed.raw);
    assert_eq!(done["test"]["failed"], 1);
    assert_eq!(done["test"]["passed"], 1);
    assert_eq!(done["status"], "failed");
    // Nothing the server started is left behind.
    let ps = server
        .exec(&id, "ps -eo args | grep -c '[a]pp.py' || true")
        .await;
    assert_eq!(ps.done()["output"], "0\n");
}

#[tokio::test]
async fn a_server_that_crashes_or_a_suite_that_hangs_ends_with_a_clear_error() {
    let server = TestServer::start().await;
    let id = server.sandbox().await;
    let crash = serde_json::json!({
        "command": "echo 'port already taken' >&2; exit 3", "test": true,
        "test_command": "echo should-not-run",
    });
    let crashed = server.exec_body(&id, crash).await;
    let done = crashed.done();
    assert_eq!(done["status"], "failed", "{}", crashed.raw);
    assert_eq!(
        done["error"],
        "test setup failed: the server exited with code 3 before it was ready"
    );
    assert!(!done["output"].as_str().unwrap().contains("should-not-run"));
    assert!(
        events_named(&crashed, "server")
            .iter()
            .any(|l| l.contains("port already taken"))
    );

    let silent = serde_json::json!({
        "command": "sleep 60", "test": true, "ready_port": 9000, "ready_timeout": 1,
        "test_command": "true",
    });
    let done = server.exec_body(&id, silent).await.done();
    assert_eq!(
        done["error"],
        "test setup failed: the server did not listen on port 9000 within 1 s"
    );

    let hanging = serde_json::json!({
        "command": "python3 -m http.server 8000 --bind 127.0.0.1", "test": true,
        "test_command": "sleep 60", "timeout": 3,
    });
    let done = server.exec_body(&id, hanging).await.done();
    assert_eq!(done["timed_out"], true, "{done}");
    assert_eq!(done["error"], "timed out after 3 seconds");

    for bad in [
        serde_json::json!({"command": "x", "test": true, "ready_timeout": 0}),
        serde_json::json!({"command": "x", "test": true, "ready_path": "no-slash"}),
        serde_json::json!({"command": "x", "test": true, "test_command": "  "}),
        serde_json::json!({"command": "x", "test": true, "ready_port": 70000}),
    ] {
        let (status, body) = server
            .post_json(&format!("/v1/sandboxes/{id}/exec"), bad.clone())
            .await;
        assert_eq!(status, 422, "{bad}: {body}");
    }
}

/// Runs `example` through test mode, then its failing variant; returns both `done`s.
async fn passing_and_failing(
    language: &str,
    example_dir: &str,
    command: &str,
    failing_runner: &str,
) -> (serde_json::Value, serde_json::Value) {
    let server = TestServer::start().await;
    let id = server
        .create(serde_json::json!({"language": language, "memory_mb": 1024, "pids": 512}))
        .await;
    let (status, _) = server.upload_zip(&id, zip_dir(&example(example_dir))).await;
    assert_eq!(status, 201);
    let body = serde_json::json!({
        "command": command, "test": true, "ready_path": "/health", "timeout": 600,
    });
    let passed = server.exec_body(&id, body.clone()).await;
    assert_eq!(passed.done()["exit_code"], 0, "{}", passed.raw);
    let mut failing = body;
    failing["test_command"] = failing_runner.into();
    let failed = server.exec_body(&id, failing).await;
    assert_eq!(failed.done()["exit_code"], 1, "{}", failed.raw);
    (passed.done(), failed.done())
}

#[tokio::test]
async fn the_express_example_through_node_test() {
    let (passed, failed) = passing_and_failing(
        "node",
        "node-express",
        "node server.js",
        "node --test failing/",
    )
    .await;
    assert_eq!(
        passed["test"],
        serde_json::json!({"passed": 2, "failed": 0, "skipped": 0, "errors": 0, "runner": "node --test"})
    );
    assert_eq!(
        (
            failed["test"]["passed"].as_u64(),
            failed["test"]["failed"].as_u64()
        ),
        (Some(1), Some(1))
    );
}

#[tokio::test]
async fn the_go_example_through_go_test() {
    let (passed, failed) = passing_and_failing(
        "go",
        "go-http",
        "go run .",
        "go test -v -tags failing ./...",
    )
    .await;
    assert_eq!(
        passed["test"],
        serde_json::json!({"passed": 2, "failed": 0, "skipped": 0, "errors": 0, "runner": "go test"})
    );
    assert_eq!(
        (
            failed["test"]["passed"].as_u64(),
            failed["test"]["failed"].as_u64()
        ),
        (Some(2), Some(1))
    );
}

#[tokio::test]
async fn the_java_example_through_maven_and_junit() {
    let (passed, failed) = passing_and_failing(
        "java",
        "java-httpserver",
        "java -cp target/classes example.Server",
        "mvn -B -o test -Dexcluded.groups=none -Dgroups=failing",
    )
    .await;
    assert_eq!(
        passed["test"],
        serde_json::json!({"passed": 2, "failed": 0, "skipped": 0, "errors": 0, "runner": "maven"})
    );
    assert_eq!(
        (
            failed["test"]["passed"].as_u64(),
            failed["test"]["failed"].as_u64()
        ),
        (Some(0), Some(1))
    );
}
