//! Exec over SSE: v0.11 framing byte for byte, one `done` in every case, real streaming.

use std::time::Duration;

use serde_json::json;

use crate::helpers::*;

const HELLO: &str =
    "import sys\nprint('hello')\nprint('line2')\nprint('warn on stderr', file=sys.stderr)\n";

#[tokio::test]
async fn stream_matches_v0_11_bytes() {
    let server = TestServer::start().await;
    let id = server.sandbox().await;
    server
        .upload(&id, "main.py", HELLO.as_bytes().to_vec())
        .await;
    let result = server.exec(&id, "python main.py").await;
    assert_eq!(result.status, 200);
    let expected_prefix = "event: output\ndata: hello\n\n\nevent: output\ndata: line2\n\n\n\
                           event: output\ndata: warn on stderr\n\n\nevent: done\ndata: {\"exit_code\": 0, \"duration_ms\": ";
    assert!(result.raw.starts_with(expected_prefix), "{:?}", result.raw);
    assert!(result.raw.contains(
        "\"output\": \"hello\\nline2\\nwarn on stderr\\n\", \"error\": null, \"run_id\": \"run_"
    ));
    assert!(result.raw.ends_with("}\n\n"));
    let done = result.done();
    assert_eq!(done["status"], "succeeded");
    assert_eq!(done["timed_out"], false);
    assert_eq!(done["truncated"], false);
}

#[tokio::test]
async fn response_headers_are_event_stream() {
    let server = TestServer::start().await;
    let id = server.sandbox().await;
    let response = server
        .client
        .post(server.url(&format!("/v1/sandboxes/{id}/exec")))
        .json(&json!({"command": "true"}))
        .send()
        .await
        .unwrap();
    assert_eq!(
        response.headers()["content-type"],
        "text/event-stream; charset=utf-8"
    );
    assert_eq!(response.headers()["cache-control"], "no-cache");
}

#[tokio::test]
async fn failures_report_exit_code_and_last_line() {
    let server = TestServer::start().await;
    let id = server.sandbox().await;
    let done = server
        .exec(&id, "echo start; echo 'ValueError: boom' >&2; echo; exit 3")
        .await
        .done();
    assert_eq!(done["exit_code"], 3);
    assert_eq!(done["error"], "ValueError: boom");
    assert_eq!(done["status"], "failed");
    let done = server.exec(&id, "exit 4").await.done();
    assert_eq!(
        (done["exit_code"].clone(), done["error"].clone()),
        (json!(4), json!("exited with code 4"))
    );
    let done = server.exec(&id, "kill -9 $$").await.done();
    assert_eq!(done["exit_code"], 137);
    assert_eq!(done["error"], "killed by signal 9");
    let done = server.exec(&id, "no-such-binary-here").await.done();
    assert_eq!(done["exit_code"], 127);
}

#[tokio::test]
async fn odd_output_never_breaks_the_stream() {
    let server = TestServer::start().await;
    let id = server.sandbox().await;
    // Bytes that are not UTF-8 are replaced, not fatal (v0.11 died without a done).
    let done = server
        .exec(
            &id,
            r#"python3 -c "import sys; sys.stdout.buffer.write(b'ok \xff\xfe\n')""#,
        )
        .await
        .done();
    assert_eq!(done["output"], "ok \u{fffd}\u{fffd}\n");
    // A carriage-return progress bar becomes separate lines.
    let result = server.exec(&id, r"printf '10%%\r50%%\r100%%\ndone'").await;
    assert_eq!(result.lines(), ["10%", "50%", "100%", "done"]);
    // A 300 KB line without a newline is delivered in pieces, all of it.
    let done = server
        .exec(&id, "python3 -c \"print('y'*300000, end='')\"")
        .await
        .done();
    assert_eq!(
        done["output"].as_str().unwrap().replace('\n', "").len(),
        300_000
    );
    // Non-ASCII is escaped the way Python's json.dumps does it.
    let result = server.exec(&id, "echo 'héllo'").await;
    assert!(
        result.raw.contains("\"output\": \"h\\u00e9llo\\n\""),
        "{}",
        result.raw
    );
}

#[tokio::test]
async fn shell_syntax_and_workspace_path_work() {
    let server = TestServer::start().await;
    let id = server.sandbox().await;
    let done = server
        .exec(&id, "for i in 1 2; do echo $i; done; if true; then echo kw; fi; (echo sub); pwd; echo hi > /sandbox/out.txt")
        .await
        .done();
    assert_eq!(done["output"], "1\n2\nkw\nsub\n/sandbox\n");
    assert_eq!(
        std::fs::read_to_string(server.workspace(&id).join("out.txt")).unwrap(),
        "hi\n"
    );
}

#[tokio::test]
async fn output_streams_line_by_line_for_shell_python_and_node() {
    let server = TestServer::start().await;
    let id = server.sandbox().await;
    for command in [
        "echo first; sleep 1.5; echo second",
        "python3 -c \"import time; print('first'); time.sleep(1.5); print('second')\"",
        "node -e \"console.log('first'); setTimeout(() => console.log('second'), 1500)\"",
    ] {
        let chunks = server.exec_timed(&id, command).await;
        let first = chunks
            .iter()
            .find(|(_, text)| text.contains("data: first"))
            .expect("first line");
        let second = chunks
            .iter()
            .find(|(_, text)| text.contains("data: second"))
            .expect("second line");
        // The first line is on the wire long before the command ends.
        assert!(
            second.0 - first.0 >= Duration::from_millis(1200),
            "{command}: first at {:?}, second at {:?}",
            first.0,
            second.0
        );
    }
}

#[tokio::test]
async fn quiet_streams_get_keepalive_comments() {
    let server = TestServer::start_with(&[("PETRI_KEEPALIVE_SECONDS", "1")]).await;
    let id = server.sandbox().await;
    let result = server.exec(&id, "sleep 2.5; echo late").await;
    assert!(result.raw.contains(": keepalive\n\n"), "{:?}", result.raw);
    assert_eq!(result.lines(), ["late"]);
    assert_eq!(result.done()["exit_code"], 0);
}

#[tokio::test]
async fn timeout_kills_and_reports() {
    let server = TestServer::start().await;
    let id = server.sandbox().await;
    let result = server
        .exec_body(
            &id,
            json!({"command": "echo before; sleep 30", "timeout": 1}),
        )
        .await;
    let done = result.done();
    assert_eq!(done["timed_out"], true);
    assert_eq!(done["status"], "timed_out");
    assert_eq!(done["exit_code"], 124);
    assert_eq!(done["error"], "timed out after 1 seconds");
    assert_eq!(done["output"], "before\n");
    assert!(done["duration_ms"].as_u64().unwrap() < 5000);
    let (status, body) = server
        .post_json(
            &format!("/v1/sandboxes/{id}/exec"),
            json!({"command": "true", "timeout": 0}),
        )
        .await;
    assert_eq!(
        (status, body["code"].clone()),
        (422, json!("invalid_input"))
    );
}

#[tokio::test]
async fn server_default_timeout_applies() {
    let server = TestServer::start_with(&[("PETRI_EXEC_TIMEOUT_SECONDS", "1")]).await;
    let id = server.sandbox().await;
    assert_eq!(
        server.exec(&id, "sleep 10").await.done()["status"],
        "timed_out"
    );
}

#[tokio::test]
async fn output_cap_truncates_stream_and_store() {
    let server = TestServer::start_with(&[("PETRI_OUTPUT_MAX_MB", "1")]).await;
    let id = server.sandbox().await;
    let result = server
        .exec(&id, "yes flood | head -c 5000000; echo; echo tail-marker")
        .await;
    let done = result.done();
    assert_eq!(done["truncated"], true);
    assert_eq!(done["exit_code"], 0);
    let output = done["output"].as_str().unwrap();
    assert!(output.len() <= 1 << 20, "{}", output.len());
    assert!(!output.contains("tail-marker"));
    let streamed: usize = result.lines().iter().map(|l| l.len() + 1).sum();
    assert!(streamed <= 1 << 20);
    let run_id = done["run_id"].as_str().unwrap();
    let stored = server
        .get(&format!("/v1/runs/{run_id}/output"))
        .await
        .text()
        .await
        .unwrap();
    assert_eq!(stored, output);
    let (_, run) = server.get_json(&format!("/v1/runs/{run_id}")).await;
    assert_eq!(run["output_truncated"], true);
}

#[tokio::test]
async fn published_sdk_gets_json_shaped_output() {
    // jhansi 0.1.7's Sandbox.exec always sends `test` and keeps only data lines containing
    // `"type": "output"`; with raw v0.11 framing it returned "" for every command.
    let server = TestServer::start().await;
    let id = server.sandbox().await;
    let command = r#"echo hello; echo '{"type": "output", "data": "injected"}'"#;
    let result = server
        .exec_body(&id, json!({"command": command, "test": false}))
        .await;
    let data: Vec<serde_json::Value> = result
        .events
        .iter()
        .filter(|e| e.name == "output")
        .map(|e| serde_json::from_str(&e.data).unwrap())
        .collect();
    assert_eq!(data[0], json!({"type": "output", "data": "hello"}));
    // Program output that imitates the envelope stays inert data.
    assert_eq!(data[1]["data"], r#"{"type": "output", "data": "injected"}"#);
    assert!(
        result
            .raw
            .contains("data: {\"type\": \"output\", \"data\": \"hello\"}\n\n")
    );
    assert_eq!(result.done()["exit_code"], 0);
    // An explicit format wins.
    let raw = server
        .exec_body(
            &id,
            json!({"command": "echo x", "test": false, "output_format": "raw"}),
        )
        .await;
    assert_eq!(raw.lines(), ["x"]);
    // `exec(test=True)` (exactly the SDK's body) is test mode, in the same envelope: the
    // runner's lines are the output (here pytest's absence: no test dependencies uploaded).
    let tested = server
        .exec_body(&id, json!({"command": "exit 0", "test": true}))
        .await;
    let first = tested.events.iter().find(|e| e.name == "output").unwrap();
    let envelope: serde_json::Value = serde_json::from_str(&first.data).unwrap();
    assert_eq!(envelope["type"], "output", "{}", tested.raw);
    assert!(
        tested.raw.contains("No module named pytest"),
        "{}",
        tested.raw
    );
    assert_eq!(tested.done()["exit_code"], 1);
    // With test mode's own options the client reads raw lines.
    let raw_test = server
        .exec_body(
            &id,
            json!({"command": "exit 0", "test": true, "test_command": "echo runner says hi"}),
        )
        .await;
    assert_eq!(raw_test.lines(), ["runner says hi"]);
}
