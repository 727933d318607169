//! Memory, process and CPU limits; the rlimit fallback when no cgroup is writable.

use serde_json::json;

use crate::helpers::*;

#[tokio::test]
async fn per_sandbox_limits_are_validated_and_reported() {
    let server = TestServer::start().await;
    let (status, created) = server
        .post_json(
            "/v1/sandboxes",
            json!({"memory_mb": 128, "pids": 64, "cpus": 0.5, "disk_mb": 64}),
        )
        .await;
    assert_eq!(status, 201);
    assert_eq!(
        created["limits"],
        json!({"memory_mb": 128, "pids": 64, "cpus": 0.5, "disk_mb": 64})
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
