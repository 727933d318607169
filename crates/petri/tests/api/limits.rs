//! Memory, process and CPU limits; the rlimit fallback when no cgroup is writable.

use serde_json::json;

use crate::helpers::*;

#[tokio::test]
async fn memory_bomb_is_a_failed_run_not_a_dead_server() {
    let server = TestServer::start().await;
    let id = server.create(json!({"memory_mb": 64})).await;
    let done = server
        .exec(
            &id,
            "python3 -c \"b = bytearray(400 * 1024 * 1024); print('survived')\"",
        )
        .await
        .done();
    assert_eq!(done["exit_code"], 137);
    assert_eq!(done["oom_killed"], true);
    assert_eq!(done["status"], "failed");
    let error = done["error"].as_str().unwrap();
    assert!(error.contains("memory limit of 64 MiB"), "{error}");
    assert!(!done["output"].as_str().unwrap().contains("survived"));
    // The server and the sandbox carry on.
    assert_eq!(server.get_json("/health").await.0, 200);
    assert_eq!(
        server.exec(&id, "echo alive").await.done()["output"],
        "alive\n"
    );
    // Memory filled through tmpfs is charged to the sandbox as well.
    let done = server
        .exec(&id, "head -c 200000000 /dev/zero > /tmp/fill; echo wrote")
        .await
        .done();
    assert_ne!(done["output"], "wrote\n", "{done}");
}

#[tokio::test]
async fn fork_bomb_is_contained() {
    let server = TestServer::start().await;
    let id = server.create(json!({"pids": 32})).await;
    let result = server
        .exec_body(&id, json!({"command": "bomb() { bomb | bomb & }; bomb; sleep 2; echo after", "timeout": 10}))
        .await;
    let done = result.done();
    assert!(done["duration_ms"].as_u64().unwrap() < 10_000, "{done}");
    assert_eq!(server.get_json("/health").await.0, 200);
    let done = server
        .exec(
            &id,
            "for i in $(seq 10); do sleep 1 & done; echo spawned; wait",
        )
        .await
        .done();
    assert!(done["output"].as_str().unwrap().contains("spawned"));
    let count = server.exec(&id, "python3 -c \"import os\nn=0\ntry:\n  while True:\n    if os.fork()==0:\n      import time; time.sleep(3); os._exit(0)\n    n+=1\nexcept OSError: print(n)\"").await;
    let forked: u64 = count.lines()[0].trim().parse().unwrap();
    assert!(forked < 32, "forked {forked} processes under a limit of 32");
}

#[tokio::test]
async fn cpu_limit_throttles() {
    let server = TestServer::start().await;
    let id = server.create(json!({"cpus": 0.2})).await;
    let done = server
        .exec(&id, "python3 -c \"import time\nend=time.time()+1.5\nwhile time.time()<end: pass\nprint(round(time.process_time(),2))\"")
        .await
        .done();
    let cpu: f64 = done["output"].as_str().unwrap().trim().parse().unwrap();
    assert!(
        cpu < 0.6,
        "used {cpu}s of CPU in 1.5s wall under a 0.2-core limit"
    );
}

#[tokio::test]
async fn per_sandbox_limits_are_validated_and_reported() {
    let server = TestServer::start().await;
    let (status, created) = server
        .post_json(
            "/v1/sandboxes",
            json!({"memory_mb": 128, "pids": 64, "cpus": 0.5}),
        )
        .await;
    assert_eq!(status, 201);
    assert_eq!(
        created["limits"],
        json!({"memory_mb": 128, "pids": 64, "cpus": 0.5})
    );
    for bad in [
        json!({"memory_mb": 1}),
        json!({"memory_mb": 999_999}),
        json!({"pids": 0}),
        json!({"cpus": -1.0}),
        json!({"cpus": 100.0}),
    ] {
        let (status, body) = server.post_json("/v1/sandboxes", bad.clone()).await;
        assert_eq!(status, 422, "{bad} -> {body}");
    }
}

#[tokio::test]
async fn without_cgroups_limits_degrade_to_rlimits_and_say_so() {
    let server = TestServer::start_with(&[("PETRI_DISABLE_CGROUPS", "1")]).await;
    assert!(
        server.banner.contains("limits degraded"),
        "{}",
        server.banner
    );
    let (_, health) = server.get_json("/health").await;
    assert_eq!(health["limits"]["degraded"], true);
    assert_eq!(health["limits"]["mode"], "rlimit");
    assert!(
        health["limits"]["note"]
            .as_str()
            .unwrap()
            .contains("limits degraded")
    );
    let id = server.create(json!({"memory_mb": 64})).await;
    let done = server
        .exec(
            &id,
            "python3 -c \"b = bytearray(400 * 1024 * 1024); print('survived')\"",
        )
        .await
        .done();
    assert_ne!(done["exit_code"], 0);
    assert!(
        done["output"].as_str().unwrap().contains("MemoryError"),
        "{done}"
    );
}

#[tokio::test]
async fn server_wide_cap_queues_execs_across_sandboxes() {
    let server = TestServer::start_with(&[
        ("PETRI_MAX_RUNNING_EXECS", "1"),
        ("PETRI_KEEPALIVE_SECONDS", "1"),
    ])
    .await;
    let (a, b) = (server.sandbox().await, server.sandbox().await);
    let command = "date +%s%N; sleep 1.5; date +%s%N";
    let (first, second) = tokio::join!(server.exec(&a, command), server.exec(&b, command));
    let span = |result: &ExecResult| -> (u128, u128) {
        let lines = result.lines();
        (
            lines[0].trim().parse().unwrap(),
            lines[1].trim().parse().unwrap(),
        )
    };
    let (a_start, a_end) = span(&first);
    let (b_start, b_end) = span(&second);
    assert!(
        a_end <= b_start || b_end <= a_start,
        "the two execs overlapped"
    );
    // The one that waited kept its stream alive meanwhile.
    let waited = if a_start < b_start { &second } else { &first };
    assert!(waited.raw.contains(": keepalive"), "{}", waited.raw);
}

#[tokio::test]
async fn an_unprivileged_server_still_isolates_and_says_limits_are_degraded() {
    let server = TestServer::start_as_nobody().await;
    assert!(
        server.banner.contains("limits degraded"),
        "{}",
        server.banner
    );
    let (_, health) = server.get_json("/health").await;
    assert_eq!(health["limits"]["degraded"], true);
    let id = server.create(json!({"memory_mb": 64})).await;
    let done = server
        .exec(&id, "id -u; echo hi > /sandbox/f && cat /sandbox/f; python3 -c \"b = bytearray(300 * 1024 * 1024)\"")
        .await
        .done();
    let output = done["output"].as_str().unwrap();
    assert!(output.starts_with("1000\nhi\n"), "{output}");
    assert!(output.contains("MemoryError"), "{output}");
    let isolated = server
        .exec(
            &id,
            "cat /proc/net/dev | grep -c eth; grep CapEff /proc/self/status",
        )
        .await
        .done();
    assert!(
        isolated["output"]
            .as_str()
            .unwrap()
            .contains("CapEff:\t0000000000000000"),
        "{isolated}"
    );
    // Dependency installs need no privilege either: the exec builds its own network
    // namespace and hands the server its proxy listener.
    assert_eq!(health["installs"]["available"], true, "{health}");
    server
        .upload(&id, "requirements.txt", b"six==1.16.0\n".to_vec())
        .await;
    let installed = server
        .exec(&id, "python -c 'import six; print(six.__version__)'")
        .await;
    assert_eq!(installed.done()["output"], "1.16.0\n", "{}", installed.raw);
}
