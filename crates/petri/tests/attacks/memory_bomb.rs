//! Memory bomb: allocating 400 MiB under a 64 MiB limit, and filling the exec's tmpfs `/tmp`.
//! Contained by the sandbox's cgroup memory limit (tmpfs pages are charged to it too): the
//! OOM killer ends the run, reported as `oom_killed`, and only that run fails.

use serde_json::json;

use crate::helpers::*;
use crate::{assert_unaffected, bystander};

#[tokio::test]
async fn memory_bomb_is_a_failed_run_not_a_dead_server() {
    let server = TestServer::start().await;
    let other = bystander(&server).await;
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
    assert_unaffected(&server, &other).await;
}
