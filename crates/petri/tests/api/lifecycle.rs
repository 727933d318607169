//! Lifecycle: run history, client disconnects, crashes and restarts, graceful shutdown, TTL
//! expiry, deletion, per-sandbox queueing, log retention and metrics.

use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use futures_util::StreamExt;
use futures_util::stream::BoxStream;
use serde_json::{Value, json};

use crate::helpers::*;

/// A process-unique token for host process markers.
fn unique() -> String {
    static COUNTER: AtomicU64 = AtomicU64::new(0);
    let nanos = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .unwrap()
        .subsec_nanos();
    let n = COUNTER.fetch_add(1, Ordering::SeqCst);
    format!("{}{:09}{n}", std::process::id() % 1000, nanos)
}

/// A `sleep` whose own command line (not only the shell's) carries a unique marker, since
/// the shell may `exec` its last command. Returns the command fragment and the marker.
fn marked_sleep(secs: u32) -> (String, String) {
    let marker = format!("{secs}.{}", unique());
    (format!("sleep {marker} # marker-{marker}"), marker)
}

/// An exec whose stream is read piece by piece.
struct LiveExec {
    stream: BoxStream<'static, reqwest::Result<Vec<u8>>>,
    text: String,
}

impl LiveExec {
    async fn start(server: &TestServer, id: &str, command: &str) -> Self {
        let response = server
            .client
            .post(server.url(&format!("/v1/sandboxes/{id}/exec")))
            .json(&json!({ "command": command }))
            .send()
            .await
            .unwrap();
        assert_eq!(
            response.status().as_u16(),
            200,
            "exec of {command:?} was refused"
        );
        Self {
            stream: response
                .bytes_stream()
                .map(|c| c.map(|b| b.to_vec()))
                .boxed(),
            text: String::new(),
        }
    }

    /// Reads until `needle` has arrived (panics after 10 s).
    async fn read_until(&mut self, needle: &str) {
        let deadline = Instant::now() + Duration::from_secs(10);
        while !self.text.contains(needle) {
            let left = deadline.saturating_duration_since(Instant::now());
            match tokio::time::timeout(left, self.stream.next()).await {
                Ok(Some(Ok(chunk))) => self.text.push_str(&String::from_utf8_lossy(&chunk)),
                other => panic!(
                    "stream ended or stalled before {needle:?} ({other:?}): {:?}",
                    self.text
                ),
            }
        }
    }

    /// Reads the rest of the stream (a transport error ends it) and returns all its text.
    async fn finish(mut self) -> String {
        while let Some(Ok(chunk)) = self.stream.next().await {
            self.text.push_str(&String::from_utf8_lossy(&chunk));
        }
        self.text
    }
}

/// The single `done` event of a complete stream, as JSON.
fn done_of(raw: &str) -> Value {
    ExecResult {
        status: 200,
        raw: raw.to_string(),
        events: parse_sse(raw),
    }
    .done()
}

/// Asserts `value` is a timestamp in the same format as `like` (e.g. a sandbox's created_at).
fn assert_timestamp(value: &Value, like: &str) {
    let text = value
        .as_str()
        .unwrap_or_else(|| panic!("{value} is not a timestamp string"));
    assert!(like.ends_with('Z'), "{like}");
    assert_eq!(text.len(), like.len(), "{text} vs {like}");
    for (a, b) in text.chars().zip(like.chars()) {
        assert!(
            (a.is_ascii_digit() && b.is_ascii_digit()) || a == b,
            "{text} does not have the format of {like}"
        );
    }
}

async fn text_of(server: &TestServer, path: &str) -> (u16, String) {
    let response = server.get(path).await;
    let status = response.status().as_u16();
    (status, response.text().await.unwrap())
}

async fn sandbox_status(server: &TestServer, id: &str) -> u16 {
    server
        .get(&format!("/v1/sandboxes/{id}"))
        .await
        .status()
        .as_u16()
}

/// The entry of `id` in the full sandbox list.
async fn listed(server: &TestServer, id: &str) -> Value {
    let (status, list) = server.get_json("/v1/sandboxes").await;
    assert_eq!(status, 200);
    list.as_array()
        .unwrap()
        .iter()
        .find(|s| s["id"] == id)
        .unwrap_or_else(|| panic!("{id} missing from {list}"))
        .clone()
}

async fn metrics(server: &TestServer) -> Value {
    let (status, metrics) = server.get_json("/v1/metrics").await;
    assert_eq!(status, 200, "{metrics}");
    metrics
}

#[tokio::test]
async fn runs_are_recorded_with_their_output() {
    let server = TestServer::start().await;
    let (_, created) = server.post_json("/v1/sandboxes", json!({})).await;
    let id = created["id"].as_str().unwrap().to_string();
    let created_at = created["created_at"].as_str().unwrap().to_string();

    let ok = server.exec(&id, "echo hello; echo world").await;
    let ok_done = ok.done();
    assert_eq!(ok_done["status"], "succeeded", "{}", ok.raw);
    let bad = server.exec(&id, "echo oops; exit 3").await;
    let bad_done = bad.done();
    assert_eq!(bad_done["status"], "failed", "{}", bad.raw);

    let runs = server.runs(&id).await;
    assert_eq!(runs.len(), 2, "{runs:?}");
    // Newest first.
    let (failed, succeeded) = (&runs[0], &runs[1]);
    assert_eq!(failed["id"], bad_done["run_id"]);
    assert_eq!(succeeded["id"], ok_done["run_id"]);

    assert_eq!(succeeded["command"], "echo hello; echo world");
    assert_eq!(succeeded["status"], "succeeded");
    assert_eq!(succeeded["exit_code"], 0);
    assert_eq!(succeeded["error"], Value::Null);
    assert_eq!(succeeded["sandbox_id"], id.as_str());
    assert_eq!(failed["command"], "echo oops; exit 3");
    assert_eq!(failed["status"], "failed");
    assert_eq!(failed["exit_code"], 3);
    assert_eq!(failed["error"], "oops");
    for run in &runs {
        assert_timestamp(&run["started_at"], &created_at);
        assert_timestamp(&run["completed_at"], &created_at);
        assert!(run["duration_ms"].is_u64(), "{run}");
        assert!(
            run["started_at"].as_str() <= run["completed_at"].as_str(),
            "{run}"
        );
    }
    assert!(failed["started_at"].as_str() >= succeeded["completed_at"].as_str());

    for run in &runs {
        let run_id = run["id"].as_str().unwrap();
        let (status, one) = server.get_json(&format!("/v1/runs/{run_id}")).await;
        assert_eq!(status, 200);
        assert_eq!(&one, run);
    }
    let ok_id = succeeded["id"].as_str().unwrap();
    assert_eq!(
        text_of(&server, &format!("/v1/runs/{ok_id}/output")).await,
        (200, "hello\nworld\n".to_string())
    );
    let bad_id = failed["id"].as_str().unwrap();
    assert_eq!(
        text_of(&server, &format!("/v1/runs/{bad_id}/output")).await,
        (200, "oops\n".to_string())
    );

    for unknown in ["run_0123456789abcdef", "run_nope", "nothing"] {
        for path in [
            format!("/v1/runs/{unknown}"),
            format!("/v1/runs/{unknown}/output"),
        ] {
            let (status, body) = server.get_json(&path).await;
            assert_eq!(status, 404, "{path}: {body}");
            assert_eq!(body["code"], "run_not_found", "{path}: {body}");
        }
    }
    let (status, body) = server
        .get_json("/v1/sandboxes/sb_0123456789abcdef0123456789abcdef/runs")
        .await;
    assert_eq!(status, 404, "{body}");
    assert_eq!(body["code"], "sandbox_not_found", "{body}");
}

#[tokio::test]
async fn exec_finishes_and_is_recorded_after_the_client_disconnects() {
    let server = TestServer::start().await;
    let id = server.sandbox().await;
    let mut live = LiveExec::start(&server, &id, "echo start; sleep 2; echo finished-marker").await;
    live.read_until("start").await;
    drop(live);

    let mut run = Value::Null;
    let finished = eventually(Duration::from_secs(10), async || {
        run = server
            .runs(&id)
            .await
            .first()
            .cloned()
            .unwrap_or(Value::Null);
        run["status"] == "succeeded"
    })
    .await;
    assert!(finished, "run did not succeed after the client left: {run}");
    let run_id = run["id"].as_str().unwrap();
    let (status, output) = text_of(&server, &format!("/v1/runs/{run_id}/output")).await;
    assert_eq!(status, 200);
    assert_eq!(output, "start\nfinished-marker\n");
}

#[tokio::test]
async fn a_crash_mid_run_leaves_an_interrupted_run_and_an_intact_sandbox() {
    let server = TestServer::start().await;
    let id = server.sandbox().await;
    assert_eq!(
        server.upload(&id, "keep.txt", b"kept".to_vec()).await.0,
        201
    );
    assert_eq!(
        server.exec(&id, "echo first").await.done()["status"],
        "succeeded"
    );

    let (sleep, marker) = marked_sleep(30);
    let mut live = LiveExec::start(&server, &id, &format!("echo begun; {sleep}")).await;
    live.read_until("begun").await;
    assert!(host_process_with(&marker), "the command should be running");
    drop(live);

    let server = server.crash_and_restart().await;
    let runs = server.runs(&id).await;
    assert_eq!(runs.len(), 2, "{runs:?}");
    let interrupted = &runs[0];
    assert_eq!(interrupted["status"], "interrupted", "{interrupted}");
    assert!(interrupted["completed_at"].is_string(), "{interrupted}");
    assert!(interrupted["command"].as_str().unwrap().contains(&marker));
    assert_eq!(runs[1]["status"], "succeeded");

    assert_eq!(sandbox_status(&server, &id).await, 200);
    let (status, kept) = text_of(&server, &format!("/v1/sandboxes/{id}/files/keep.txt")).await;
    assert_eq!((status, kept.as_str()), (200, "kept"));
    assert!(server.workspace(&id).join("keep.txt").exists());
    assert!(
        eventually(Duration::from_secs(5), async || !host_process_with(&marker)).await,
        "the sandboxed command outlived the server"
    );

    let metrics = metrics(&server).await;
    assert_eq!(metrics["runs_total"], 2, "{metrics}");
    assert_eq!(metrics["runs_failed"], 1, "{metrics}");
    assert_eq!(metrics["success_rate"], 0.5, "{metrics}");
    assert_eq!(metrics["sandboxes_active"], 1, "{metrics}");

    // The restarted server runs commands in the same sandbox.
    assert_eq!(server.exec(&id, "cat keep.txt").await.lines(), ["kept"]);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn graceful_shutdown_ends_running_streams_with_interrupted() {
    let mut server = TestServer::start().await;
    let id = server.sandbox().await;
    let (sleep, marker) = marked_sleep(30);
    let mut live = LiveExec::start(&server, &id, &format!("echo a; {sleep}")).await;
    live.read_until("data: a").await;
    let reader = tokio::spawn(live.finish());

    let started = Instant::now();
    let (exit, elapsed) = tokio::task::spawn_blocking(move || {
        let exit = server.terminate();
        (exit, started.elapsed())
    })
    .await
    .unwrap();
    assert!(exit.success(), "server exited with {exit:?}");
    assert!(
        elapsed < Duration::from_secs(15),
        "shutdown took {elapsed:?}"
    );

    let raw = tokio::time::timeout(Duration::from_secs(5), reader)
        .await
        .expect("the stream ends with the server")
        .unwrap();
    let done = done_of(&raw);
    assert_eq!(done["status"], "interrupted", "{raw}");
    assert!(
        eventually(Duration::from_secs(5), async || !host_process_with(&marker)).await,
        "the sandboxed command outlived the server"
    );
}

#[tokio::test]
async fn sandboxes_and_deletions_survive_a_restart() {
    let server = TestServer::start().await;
    let live = server.sandbox().await;
    let gone = server.sandbox().await;
    assert_eq!(server.delete(&format!("/v1/sandboxes/{gone}")).await, 204);

    let server = server.crash_and_restart().await;
    assert_eq!(sandbox_status(&server, &live).await, 200);
    assert_eq!(sandbox_status(&server, &gone).await, 404);
    let live_entry = listed(&server, &live).await;
    assert_eq!(live_entry["deleted_at"], Value::Null, "{live_entry}");
    assert_ne!(live_entry["status"], "deleted", "{live_entry}");
    let gone_entry = listed(&server, &gone).await;
    assert_eq!(gone_entry["status"], "deleted", "{gone_entry}");
    assert_timestamp(
        &gone_entry["deleted_at"],
        gone_entry["created_at"].as_str().unwrap(),
    );

    let metrics = metrics(&server).await;
    assert_eq!(metrics["sandboxes_active"], 1, "{metrics}");
    assert_eq!(metrics["sandboxes_total"], 2, "{metrics}");
}

const FAST_TTL: &[(&str, &str)] = &[
    ("PETRI_SANDBOX_TTL_SECONDS", "2"),
    ("PETRI_SWEEP_INTERVAL_SECONDS", "1"),
];

#[tokio::test]
async fn idle_sandboxes_expire_once_and_lose_their_workspace() {
    let server = TestServer::start_with(FAST_TTL).await;
    let id = server.sandbox().await;
    assert_eq!(
        server.exec(&id, "echo hi > note.txt").await.done()["status"],
        "succeeded"
    );
    assert!(server.workspace(&id).join("note.txt").exists());

    assert!(
        eventually(Duration::from_secs(6), async || sandbox_status(
            &server, &id
        )
        .await
            == 404)
        .await,
        "an idle sandbox outlived its TTL"
    );
    let entry = listed(&server, &id).await;
    assert_eq!(entry["status"], "expired", "{entry}");
    assert_timestamp(&entry["deleted_at"], entry["created_at"].as_str().unwrap());
    // Later sweeps leave it alone.
    tokio::time::sleep(Duration::from_millis(2500)).await;
    let again = listed(&server, &id).await;
    assert_eq!(again["deleted_at"], entry["deleted_at"]);
    assert_eq!(again["status"], "expired");

    assert!(
        !exists(&server.workspace(&id)),
        "the workspace of an expired sandbox is still on disk"
    );
    let runs = server.runs(&id).await;
    assert_eq!(runs.len(), 1, "{runs:?}");
    assert_eq!(runs[0]["status"], "succeeded");
}

#[tokio::test]
async fn a_running_exec_keeps_its_sandbox_alive() {
    let server = TestServer::start_with(FAST_TTL).await;
    let id = server.sandbox().await;
    let result = server.exec(&id, "sleep 5; echo still-here").await;
    let done = result.done();
    assert_eq!(done["status"], "succeeded", "{}", result.raw);
    assert_eq!(result.lines(), ["still-here"]);
    assert_eq!(sandbox_status(&server, &id).await, 200);
    let runs = server.runs(&id).await;
    assert_eq!(runs[0]["status"], "succeeded");
}

#[tokio::test]
async fn uploads_extend_the_ttl() {
    let server = TestServer::start_with(FAST_TTL).await;
    let id = server.sandbox().await;
    for i in 0..4 {
        tokio::time::sleep(Duration::from_secs(1)).await;
        let (status, body) = server
            .upload(&id, &format!("f{i}.txt"), b"x".to_vec())
            .await;
        assert_eq!(status, 201, "upload {i}: {body}");
    }
    assert_eq!(
        sandbox_status(&server, &id).await,
        200,
        "uploads did not extend the TTL"
    );
    // And the TTL really is short on this server: once uploads stop, it expires.
    assert!(
        eventually(Duration::from_secs(6), async || sandbox_status(
            &server, &id
        )
        .await
            == 404)
        .await,
        "the sandbox never expired"
    );
}

#[tokio::test]
async fn delete_is_final_and_keeps_history() {
    let server = TestServer::start().await;
    let id = server.sandbox().await;
    assert_eq!(
        server.exec(&id, "echo hi > a.txt").await.done()["status"],
        "succeeded"
    );
    assert!(exists(&server.workspace(&id)));

    assert_eq!(server.delete(&format!("/v1/sandboxes/{id}")).await, 204);
    assert_eq!(server.delete(&format!("/v1/sandboxes/{id}")).await, 404);
    let (status, body) = server.get_json(&format!("/v1/sandboxes/{id}")).await;
    assert_eq!(status, 404);
    assert_eq!(body["code"], "sandbox_not_found", "{body}");
    assert!(
        !exists(&server.workspace(&id)),
        "the workspace is still on disk"
    );
    let runs = server.runs(&id).await;
    assert_eq!(runs.len(), 1, "{runs:?}");
    assert_eq!(runs[0]["status"], "succeeded");
    let (status, _) = server.get_json(&format!("/v1/sandboxes/{id}/files")).await;
    assert_eq!(status, 404);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn delete_kills_a_running_exec() {
    let server = TestServer::start().await;
    let id = server.sandbox().await;
    let (sleep, marker) = marked_sleep(30);
    let mut live = LiveExec::start(&server, &id, &format!("echo x; {sleep}")).await;
    live.read_until("data: x").await;
    assert!(host_process_with(&marker));
    let reader = tokio::spawn(live.finish());

    assert_eq!(server.delete(&format!("/v1/sandboxes/{id}")).await, 204);
    let raw = tokio::time::timeout(Duration::from_secs(5), reader)
        .await
        .expect("the stream ends when its sandbox is deleted")
        .unwrap();
    let done = done_of(&raw);
    assert_eq!(done["status"], "killed", "{raw}");
    assert!(
        eventually(Duration::from_secs(5), async || !host_process_with(&marker)).await,
        "the command outlived its sandbox"
    );
    let runs = server.runs(&id).await;
    assert_eq!(runs[0]["status"], "killed", "{runs:?}");
    assert!(!exists(&server.workspace(&id)));
}

/// `secs.nanos` as printed by `date +%s.%N`, comparable without float rounding.
fn timestamp(line: &str) -> (u64, u64) {
    let (secs, nanos) = line
        .trim()
        .split_once('.')
        .unwrap_or_else(|| panic!("not a timestamp: {line:?}"));
    (secs.parse().unwrap(), nanos.parse().unwrap())
}

#[tokio::test]
async fn execs_on_one_sandbox_run_one_at_a_time() {
    let server = TestServer::start().await;
    let id = server.sandbox().await;
    let command = "date +%s.%N; sleep 1; date +%s.%N";
    let (a, b) = tokio::join!(server.exec(&id, command), server.exec(&id, command));
    let mut spans = Vec::new();
    for result in [&a, &b] {
        assert_eq!(result.done()["status"], "succeeded", "{}", result.raw);
        let lines = result.lines();
        assert_eq!(lines.len(), 2, "{}", result.raw);
        spans.push((timestamp(&lines[0]), timestamp(&lines[1])));
    }
    spans.sort();
    let (first, second) = (spans[0], spans[1]);
    assert!(
        second.0 >= first.1,
        "the execs overlapped: {first:?} and {second:?}"
    );
}

#[tokio::test]
async fn a_full_queue_refuses_with_429() {
    let server = TestServer::start_with(&[("PETRI_EXEC_QUEUE_MAX", "1")]).await;
    let id = server.sandbox().await;
    let exec_path = server.url(&format!("/v1/sandboxes/{id}/exec"));
    let (running, queued, refused) = tokio::join!(
        server.exec(&id, "sleep 3; echo first"),
        async {
            tokio::time::sleep(Duration::from_millis(200)).await;
            server.exec(&id, "echo second").await
        },
        async {
            tokio::time::sleep(Duration::from_millis(600)).await;
            let response = server
                .client
                .post(&exec_path)
                .json(&json!({ "command": "echo third" }))
                .send()
                .await
                .unwrap();
            let status = response.status().as_u16();
            (
                status,
                response.json::<Value>().await.unwrap_or(Value::Null),
            )
        },
    );
    assert_eq!(refused.0, 429, "{}", refused.1);
    assert_eq!(refused.1["code"], "sandbox_busy", "{}", refused.1);
    assert_eq!(running.done()["status"], "succeeded", "{}", running.raw);
    assert_eq!(running.lines(), ["first"]);
    assert_eq!(queued.done()["status"], "succeeded", "{}", queued.raw);
    assert_eq!(queued.lines(), ["second"]);
    let commands: Vec<_> = server
        .runs(&id)
        .await
        .iter()
        .map(|r| r["command"].clone())
        .collect();
    assert_eq!(
        commands,
        [json!("echo second"), json!("sleep 3; echo first")]
    );
}

#[tokio::test]
async fn log_retention_evicts_the_oldest_outputs() {
    let server = TestServer::start_with(&[("PETRI_LOG_MAX_MB", "1")]).await;
    let id = server.sandbox().await;
    let mut run_ids = Vec::new();
    for _ in 0..3 {
        let result = server.exec(&id, "python3 -c \"print('x'*600000)\"").await;
        let done = result.done();
        assert_eq!(
            done["status"],
            "succeeded",
            "{}",
            &result.raw[..result.raw.len().min(500)]
        );
        run_ids.push(done["run_id"].as_str().unwrap().to_string());
    }
    let output_status = async |run_id: &str| -> (u16, Value) {
        let response = server.get(&format!("/v1/runs/{run_id}/output")).await;
        let status = response.status().as_u16();
        (status, response.json().await.unwrap_or(Value::Null))
    };
    let mut evicted = (0, Value::Null);
    let gone = eventually(Duration::from_secs(5), async || {
        evicted = output_status(&run_ids[0]).await;
        evicted.0 == 410
    })
    .await;
    assert!(gone, "the oldest output was not evicted: {evicted:?}");
    assert_eq!(evicted.1["code"], "output_evicted", "{}", evicted.1);
    // 2 × 600 KB exceed 1 MiB, so only the newest output may stay.
    assert!(
        eventually(Duration::from_secs(5), async || output_status(&run_ids[1])
            .await
            .0
            == 410)
        .await,
        "the kept outputs exceed PETRI_LOG_MAX_MB"
    );

    let runs = server.runs(&id).await;
    assert_eq!(runs.len(), 3);
    let oldest = runs
        .iter()
        .find(|r| r["id"] == run_ids[0].as_str())
        .expect("the evicted run is still listed");
    assert_eq!(oldest["output_evicted"], true, "{oldest}");
    assert_eq!(oldest["status"], "succeeded");
    let newest = &runs[0];
    assert_eq!(newest["id"], run_ids[2].as_str());
    assert_eq!(newest["output_evicted"], false, "{newest}");
    let (status, output) = text_of(&server, &format!("/v1/runs/{}/output", run_ids[2])).await;
    assert_eq!(status, 200);
    assert_eq!(output.chars().filter(|c| *c == 'x').count(), 600_000);
    assert!(output.chars().all(|c| c == 'x' || c == '\n'));
}

#[tokio::test]
async fn metrics_count_runs_agents_and_live_sandboxes() {
    let server = TestServer::start().await;
    let fresh = metrics(&server).await;
    assert_eq!(fresh["success_rate"], Value::Null, "{fresh}");
    assert_eq!(fresh["avg_duration_ms"], 0, "{fresh}");
    assert_eq!(fresh["runs_total"], 0, "{fresh}");
    assert_eq!(fresh["runs_failed"], 0, "{fresh}");
    assert_eq!(fresh["sandboxes_active"], 0, "{fresh}");
    assert_eq!(fresh["sandboxes_total"], 0, "{fresh}");
    assert_eq!(fresh["by_agent"], json!({}), "{fresh}");

    let id = server.create(json!({ "agent": "claude-code" })).await;
    for command in ["true", "echo ok", "exit 1"] {
        server.exec(&id, command).await.done();
    }
    let idle = server.sandbox().await;
    let gone = server.sandbox().await;
    assert_eq!(server.delete(&format!("/v1/sandboxes/{gone}")).await, 204);

    let metrics = metrics(&server).await;
    assert_eq!(metrics["runs_total"], 3, "{metrics}");
    assert_eq!(metrics["runs_failed"], 1, "{metrics}");
    assert_eq!(metrics["success_rate"], 0.67, "{metrics}");
    assert!(metrics["avg_duration_ms"].is_u64(), "{metrics}");
    assert_eq!(
        metrics["by_agent"],
        json!({ "claude-code": { "runs": 3, "success_rate": 0.67 } }),
        "{metrics}"
    );
    assert_eq!(metrics["sandboxes_active"], 2, "{metrics}");
    assert_eq!(metrics["sandboxes_total"], 3, "{metrics}");
    assert_eq!(sandbox_status(&server, &idle).await, 200);
}

// The tests below assert correct behaviour that the server did not have when they were
// written; each names the faulty code. They fail until those bugs are fixed.

/// `Engine::run_output` promises "partial while it runs", but the run log is written through
/// a `BufWriter` (exec/runner.rs, `Collected::log`) that is only flushed when the run ends.
#[tokio::test]
async fn output_of_a_running_run_is_readable() {
    let server = TestServer::start().await;
    let id = server.sandbox().await;
    let mut live = LiveExec::start(&server, &id, "echo begun; sleep 30").await;
    live.read_until("begun").await;
    let run_id = server.runs(&id).await[0]["id"]
        .as_str()
        .unwrap()
        .to_string();
    let mut output = (0, String::new());
    let readable = eventually(Duration::from_secs(3), async || {
        output = text_of(&server, &format!("/v1/runs/{run_id}/output")).await;
        output.1 == "begun\n"
    })
    .await;
    assert!(
        readable,
        "streamed output is not in the stored output: {output:?}"
    );
}

/// Output already streamed to the client must survive a crash; with the unflushed
/// `BufWriter` it is lost and the interrupted run records 0 output bytes.
#[tokio::test]
async fn output_streamed_before_a_crash_is_kept() {
    let server = TestServer::start().await;
    let id = server.sandbox().await;
    let mut live = LiveExec::start(&server, &id, "echo begun; sleep 30").await;
    live.read_until("begun").await;
    // Let the server write what it has sent.
    tokio::time::sleep(Duration::from_millis(300)).await;
    drop(live);
    let server = server.crash_and_restart().await;
    let run = server.runs(&id).await[0].clone();
    assert_eq!(run["status"], "interrupted", "{run}");
    let run_id = run["id"].as_str().unwrap();
    let output = text_of(&server, &format!("/v1/runs/{run_id}/output")).await;
    assert_eq!(output, (200, "begun\n".to_string()), "{run}");
    assert_eq!(run["output_bytes"], 6, "{run}");
}

/// The sweeper lists expired sandboxes once, then retires them one by one
/// (lifecycle.rs `Engine::sweep`), and `Store::soft_delete_sandbox` does not re-check
/// `expires_at`. Activity on a sandbox while the sweep frees an earlier one (a large
/// workspace takes a while to remove) therefore does not save it.
#[tokio::test]
async fn activity_during_a_sweep_saves_a_sandbox() {
    let server = TestServer::start_with(FAST_TTL).await;
    let big = server.sandbox().await;
    let filled = server
        .exec(
            &big,
            "mkdir d && cd d && seq 60000 | xargs touch && ls | wc -l",
        )
        .await;
    assert_eq!(filled.lines(), ["60000"], "{}", filled.raw);
    // Expires a moment after `big`, so usually in the same sweep.
    let small = server.sandbox().await;
    let deadline = Instant::now() + Duration::from_secs(8);
    while sandbox_status(&server, &big).await != 404 {
        assert!(Instant::now() < deadline, "the big sandbox never expired");
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    // `big` is retired; its workspace is being removed. `small` is still live: use it.
    let (status, body) = server.upload(&small, "fresh.txt", b"x".to_vec()).await;
    if status != 201 {
        // `small` expired before `big`'s removal started; nothing to prove this time.
        assert_eq!(status, 404, "{body}");
        return;
    }
    tokio::time::sleep(Duration::from_secs(1)).await;
    // The upload pushed the expiry 2 s out, so 1 s later the sandbox must still be there.
    let entry = listed(&server, &small).await;
    assert_eq!(
        sandbox_status(&server, &small).await,
        200,
        "expired 1 s after an upload with a 2 s TTL: {entry}"
    );
}

/// A sandbox running an exec never expires (lifecycle.rs `Engine::sweep`), and GET reports
/// it `running`, but `GET /v1/sandboxes/active` (`Store::list_live_sandboxes`) drops it as
/// soon as its `expires_at`, set when the exec started, has passed.
#[tokio::test]
async fn a_sandbox_running_longer_than_its_ttl_stays_active() {
    let server = TestServer::start_with(FAST_TTL).await;
    let id = server.sandbox().await;
    let (result, (one, active)) = tokio::join!(server.exec(&id, "sleep 4"), async {
        tokio::time::sleep(Duration::from_millis(3000)).await;
        let one = server.get_json(&format!("/v1/sandboxes/{id}")).await;
        let active = server.get_json("/v1/sandboxes/active").await;
        (one, active)
    });
    assert_eq!(result.done()["status"], "succeeded", "{}", result.raw);
    assert_eq!(one.0, 200, "{}", one.1);
    assert_eq!(one.1["status"], "running", "{}", one.1);
    let listed = active
        .1
        .as_array()
        .unwrap()
        .iter()
        .any(|s| s["id"] == id.as_str());
    assert!(
        listed,
        "a running sandbox is missing from /v1/sandboxes/active: {} (itself: {})",
        active.1, one.1
    );
}
