//! Background processes: `"background": true` answers at once with an id; the process can be
//! listed, followed (reattach), signalled and killed, shares the sandbox's network and limits,
//! and dies with its sandbox.

use std::time::Duration;

use serde_json::{Value, json};

use crate::helpers::{ExecResult, TestServer, eventually, host_process_with, parse_sse};

/// A `sleep` argument no other process has: its command line marks it on the host.
fn sleeper() -> String {
    use std::sync::atomic::{AtomicU32, Ordering};
    static COUNTER: AtomicU32 = AtomicU32::new(0);
    let nanos = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .subsec_nanos();
    format!(
        "{}.{nanos:09}{}",
        1000 + std::process::id() % 1000,
        COUNTER.fetch_add(1, Ordering::SeqCst)
    )
}

/// A server that says when it is ready, answers HTTP on `port`, and on SIGTERM says goodbye
/// and exits with code 3.
const SERVER: &str = r#"
import http.server, signal, sys
port = int(sys.argv[1])
def bye(*_):
    print("bye", flush=True)
    sys.exit(3)
signal.signal(signal.SIGTERM, bye)
class Hello(http.server.BaseHTTPRequestHandler):
    def do_GET(self):
        body = b"hello from the background"
        self.send_response(200)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)
    def log_message(self, *args):
        print("request", self.path, flush=True)
server = http.server.HTTPServer(("127.0.0.1", port), Hello)
print("ready", flush=True)
server.serve_forever()
"#;

async fn start(server: &TestServer, id: &str, command: &str) -> Value {
    let (status, process) = server
        .post_json(
            &format!("/v1/sandboxes/{id}/exec"),
            json!({ "command": command, "background": true }),
        )
        .await;
    assert_eq!(status, 202, "{process}");
    assert_eq!(process["status"], "running", "{process}");
    assert_eq!(process["id"], process["run_id"]);
    process
}

/// Reads a process's output stream to its end (the process must be ending).
async fn follow(server: &TestServer, id: &str, process: &str) -> ExecResult {
    let response = server
        .get(&format!("/v1/sandboxes/{id}/processes/{process}/output"))
        .await;
    let status = response.status().as_u16();
    let raw = String::from_utf8(response.bytes().await.unwrap().to_vec()).unwrap();
    ExecResult {
        status,
        events: parse_sse(&raw),
        raw,
    }
}

async fn process(server: &TestServer, id: &str, process: &str) -> Value {
    let (status, view) = server
        .get_json(&format!("/v1/sandboxes/{id}/processes/{process}"))
        .await;
    assert_eq!(status, 200, "{view}");
    view
}

#[tokio::test]
async fn a_background_server_is_listed_reached_followed_signalled_and_reports_its_exit() {
    let server = TestServer::start().await;
    let id = server.sandbox().await;
    server
        .upload(&id, "server.py", SERVER.as_bytes().to_vec())
        .await;

    let started = start(&server, &id, "python server.py 8080").await;
    let pid = started["id"].as_str().unwrap().to_string();

    // It runs on while ordinary execs come and go, and they reach it on localhost: the
    // sandbox has one network.
    assert!(
        eventually(Duration::from_secs(20), async || {
            let got = server
                .exec(
                    &id,
                    "python -c \"import urllib.request as u; print(u.urlopen('http://127.0.0.1:8080/').read().decode())\"",
                )
                .await;
            got.done()["exit_code"] == 0 && got.lines().join("") == "hello from the background"
        })
        .await,
        "a later exec could not reach the background server"
    );
    let (status, list) = server
        .get_json(&format!("/v1/sandboxes/{id}/processes"))
        .await;
    assert_eq!(status, 200);
    let list = list.as_array().unwrap();
    assert_eq!(list.len(), 1, "{list:?}");
    assert_eq!(list[0]["id"], pid.as_str());
    assert_eq!(list[0]["running"], true);
    assert!(list[0]["output_bytes"].as_u64().unwrap() > 0, "{list:?}");
    // Ordinary runs are not background processes, but the process is a run.
    let runs = server.runs(&id).await;
    assert!(
        runs.iter()
            .any(|r| r["id"] == pid.as_str() && r["background"] == true)
    );
    assert!(
        runs.iter()
            .filter(|r| r["id"] != pid.as_str())
            .all(|r| r["background"] == false)
    );

    // Reattach: the stream replays from the start, follows live, and ends with the exit.
    let following = {
        let (server_url, id, pid) = (server.url.clone(), id.clone(), pid.clone());
        tokio::spawn(async move {
            let response = reqwest::get(format!(
                "{server_url}/v1/sandboxes/{id}/processes/{pid}/output"
            ))
            .await
            .unwrap();
            response.text().await.unwrap()
        })
    };
    tokio::time::sleep(Duration::from_millis(300)).await;
    let (status, signalled) = server
        .post_json(
            &format!("/v1/sandboxes/{id}/processes/{pid}/signal"),
            json!({ "signal": "SIGTERM" }),
        )
        .await;
    assert_eq!(status, 200, "{signalled}");
    let raw = tokio::time::timeout(Duration::from_secs(20), following)
        .await
        .expect("the followed stream did not end with the process")
        .unwrap();
    let events = parse_sse(&raw);
    let lines: Vec<&str> = events
        .iter()
        .filter(|e| e.name == "output")
        .map(|e| e.data.as_str())
        .collect();
    assert_eq!(lines.first(), Some(&"ready"), "{raw}");
    assert!(lines.contains(&"request /"), "{raw}");
    assert_eq!(lines.last(), Some(&"bye"), "{raw}");
    let dones: Vec<_> = events.iter().filter(|e| e.name == "done").collect();
    assert_eq!(dones.len(), 1, "{raw}");
    let done: Value = serde_json::from_str(&dones[0].data).unwrap();
    assert_eq!(done["exit_code"], 3, "{done}");
    assert_eq!(done["run_id"], pid.as_str());

    let ended = process(&server, &id, &pid).await;
    assert_eq!(ended["running"], false);
    assert_eq!(ended["exit_code"], 3);
    // Following an ended process replays its output and its end.
    let again = follow(&server, &id, &pid).await;
    assert_eq!(again.status, 200);
    assert_eq!(again.lines().first().map(String::as_str), Some("ready"));
    assert_eq!(again.done()["exit_code"], 3);
    // An ended process takes no more signals.
    let (status, body) = server
        .post_json(
            &format!("/v1/sandboxes/{id}/processes/{pid}/signal"),
            json!({ "signal": "TERM" }),
        )
        .await;
    assert_eq!(
        (status, body["code"].as_str()),
        (409, Some("process_ended"))
    );
}

#[tokio::test]
async fn kill_takes_the_whole_tree_and_bad_requests_are_refused() {
    let server = TestServer::start().await;
    let id = server.sandbox().await;
    start(&server, &id, "sleep 1000").await;
    // A shell that ignores SIGTERM with a child that left its session: only a kill of the
    // whole tree ends them.
    let marker = sleeper();
    let started = start(
        &server,
        &id,
        &format!("trap '' TERM; setsid sleep {marker} & wait"),
    )
    .await;
    let pid = started["id"].as_str().unwrap().to_string();
    assert!(
        eventually(Duration::from_secs(20), async || host_process_with(&marker)).await,
        "the background process never started"
    );
    let response = server
        .client
        .delete(server.url(&format!("/v1/sandboxes/{id}/processes/{pid}")))
        .send()
        .await
        .unwrap();
    assert_eq!(response.status().as_u16(), 200);
    let killed: Value = response.json().await.unwrap();
    assert_eq!(killed["running"], false, "{killed}");
    assert_eq!(killed["status"], "killed", "{killed}");
    assert_eq!(killed["exit_code"], 137, "{killed}");
    assert!(
        eventually(Duration::from_secs(10), async || !host_process_with(
            &marker
        ))
        .await,
        "a process started by the killed one survived"
    );

    for (body, code) in [
        (json!({"signal": "SIGSEGV"}), "invalid_input"),
        (json!({"signal": 11}), "invalid_input"),
        (json!({"signal": [15]}), "validation_error"),
        (json!({}), "validation_error"),
    ] {
        let others = server
            .get_json(&format!("/v1/sandboxes/{id}/processes"))
            .await
            .1;
        let running = others
            .as_array()
            .unwrap()
            .iter()
            .find(|p| p["running"] == true)
            .expect("the first process still runs")["id"]
            .as_str()
            .unwrap()
            .to_string();
        let (status, error) = server
            .post_json(
                &format!("/v1/sandboxes/{id}/processes/{running}/signal"),
                body.clone(),
            )
            .await;
        assert_eq!(
            (status, error["code"].as_str()),
            (422, Some(code)),
            "{body}: {error}"
        );
    }
    let (status, error) = server
        .get_json(&format!(
            "/v1/sandboxes/{id}/processes/run_0000000000000000"
        ))
        .await;
    assert_eq!(
        (status, error["code"].as_str()),
        (404, Some("process_not_found"))
    );
    let (status, error) = server
        .get_json(&format!("/v1/sandboxes/{id}/processes/../../runs"))
        .await;
    assert_eq!(status, 404, "{error}");
    // An ordinary run is not a process.
    let run_id = server.exec(&id, "true").await.done()["run_id"]
        .as_str()
        .unwrap()
        .to_string();
    let (status, _) = server
        .get_json(&format!("/v1/sandboxes/{id}/processes/{run_id}"))
        .await;
    assert_eq!(status, 404);
    // Test mode starts and stops its own server.
    let (status, error) = server
        .post_json(
            &format!("/v1/sandboxes/{id}/exec"),
            json!({"command": "sleep 1", "background": true, "test": true}),
        )
        .await;
    assert_eq!(
        (status, error["code"].as_str()),
        (422, Some("invalid_input"))
    );
}

#[tokio::test]
async fn background_processes_count_against_the_sandbox_limits() {
    let server = TestServer::start_with(&[("PETRI_BACKGROUND_MAX", "2")]).await;
    let id = server.create(json!({"pids": 40})).await;
    // 25 sleeping processes held by one background process...
    let holder = start(
        &server,
        &id,
        "for i in $(seq 25); do sleep 1000 & done; echo held; wait",
    )
    .await;
    // It answered at once; its 25 processes exist once it says so.
    let holder = holder["id"].as_str().unwrap().to_string();
    assert!(
        eventually(Duration::from_secs(20), async || {
            process(&server, &id, &holder).await["output_bytes"]
                .as_u64()
                .unwrap_or(0)
                > 0
        })
        .await,
        "the holder never started its processes"
    );
    start(&server, &id, "sleep 1000").await;
    // ...a third is one too many...
    let (status, error) = server
        .post_json(
            &format!("/v1/sandboxes/{id}/exec"),
            json!({"command": "sleep 1", "background": true}),
        )
        .await;
    assert_eq!(
        (status, error["code"].as_str()),
        (429, Some("too_many_processes")),
        "{error}"
    );
    // ...and the sandbox's process limit is shared with ordinary execs.
    let spawn_twenty = "n=0; for i in $(seq 20); do sleep 5 & n=$((n+1)); done; echo spawned";
    let crowded = server.exec(&id, spawn_twenty).await;
    assert!(
        crowded.raw.to_lowercase().contains("fork"),
        "20 more processes fitted beside 25 under a limit of 40: {}",
        crowded.raw
    );
    let (_, list) = server
        .get_json(&format!("/v1/sandboxes/{id}/processes"))
        .await;
    for process in list.as_array().unwrap() {
        let pid = process["id"].as_str().unwrap();
        assert_eq!(
            server
                .delete(&format!("/v1/sandboxes/{id}/processes/{pid}"))
                .await,
            200
        );
    }
    let roomy = server.exec(&id, spawn_twenty).await;
    assert_eq!(roomy.done()["exit_code"], 0, "{}", roomy.raw);
    assert!(!roomy.raw.to_lowercase().contains("fork"), "{}", roomy.raw);
}

#[tokio::test]
async fn background_processes_die_with_their_sandbox_deleted_or_expired() {
    let server = TestServer::start_with(&[
        ("PETRI_SANDBOX_TTL_SECONDS", "4"),
        ("PETRI_SWEEP_INTERVAL_SECONDS", "1"),
    ])
    .await;
    let deleted_marker = sleeper();
    let expired_marker = sleeper();
    let deleted = server.sandbox().await;
    let expired = server.sandbox().await;
    let doomed = start(&server, &deleted, &format!("sleep {deleted_marker}")).await;
    let idle = start(&server, &expired, &format!("sleep {expired_marker}")).await;
    assert!(
        eventually(Duration::from_secs(10), async || {
            host_process_with(&deleted_marker) && host_process_with(&expired_marker)
        })
        .await
    );
    assert_eq!(
        server.delete(&format!("/v1/sandboxes/{deleted}")).await,
        204
    );
    assert!(
        !host_process_with(&deleted_marker),
        "deleting left it running"
    );
    let (_, run) = server
        .get_json(&format!("/v1/runs/{}", doomed["id"].as_str().unwrap()))
        .await;
    assert_eq!(run["status"], "killed", "{run}");

    // A running background process does not keep its sandbox alive.
    assert!(
        eventually(Duration::from_secs(20), async || !host_process_with(
            &expired_marker
        ))
        .await,
        "the sandbox never expired, or its process outlived it"
    );
    let (status, _) = server.get_json(&format!("/v1/sandboxes/{expired}")).await;
    assert_eq!(status, 404);
    let (_, run) = server
        .get_json(&format!("/v1/runs/{}", idle["id"].as_str().unwrap()))
        .await;
    assert_eq!(run["status"], "killed", "{run}");
    // History stays: the deleted sandbox still lists its process.
    let (status, list) = server
        .get_json(&format!("/v1/sandboxes/{deleted}/processes"))
        .await;
    assert_eq!(status, 200);
    assert_eq!(list.as_array().unwrap().len(), 1);
}

/// A server that is killed leaves nothing running: its runs are recorded interrupted, and the
/// next server kills what outlived it (a TERM-ignoring shell with a `setsid` child included).
#[tokio::test]
async fn nothing_a_killed_server_started_outlives_it() {
    let server = TestServer::start().await;
    let id = server.sandbox().await;
    let marker = sleeper();
    let started = start(
        &server,
        &id,
        &format!("trap '' TERM HUP; setsid sleep {marker} & wait"),
    )
    .await;
    assert!(
        eventually(Duration::from_secs(20), async || host_process_with(&marker)).await,
        "the background process never started"
    );
    let server = server.crash_and_restart().await;
    assert!(
        eventually(Duration::from_secs(10), async || !host_process_with(
            &marker
        ))
        .await,
        "a process of the killed server outlived the restart"
    );
    let view = process(&server, &id, started["id"].as_str().unwrap()).await;
    assert_eq!(view["status"], "interrupted", "{view}");
    // The sandbox works on, its network included.
    let got = server.exec(&id, "echo again").await;
    assert_eq!(got.done()["exit_code"], 0, "{}", got.raw);
}
