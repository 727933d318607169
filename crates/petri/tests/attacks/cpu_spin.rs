//! CPU spin: busy loops that never end, in several processes, ignoring SIGTERM and SIGINT.
//! Contained by the server-side wall-clock timeout (SIGKILL of the whole process tree) and by
//! the cgroup CFS quota, which throttles a spinner to its share of a core.

use std::time::Duration;

use serde_json::json;

use crate::helpers::*;
use crate::{assert_unaffected, bystander, exec_with_timeout, unique};

#[tokio::test]
async fn spinning_past_the_timeout_is_killed() {
    let server = TestServer::start().await;
    let other = bystander(&server).await;
    let id = server.sandbox().await;
    let marker = unique("spin");
    let command = format!(
        "trap '' TERM INT HUP; \
         for i in 1 2 3; do sh -c \"trap '' TERM INT HUP; while :; do :; done\" {marker} & done; \
         python3 -c 'while True: pass' {marker}"
    );
    let done = exec_with_timeout(&server, &id, &command, 2).await.done();
    assert_eq!(done["status"], "timed_out", "{done}");
    assert_eq!(done["timed_out"], true, "{done}");
    assert_eq!(done["exit_code"], 124, "{done}");
    let duration = done["duration_ms"].as_u64().unwrap();
    assert!((2_000..6_000).contains(&duration), "{done}");
    assert!(
        eventually(Duration::from_secs(3), async || !host_process_with(&marker)).await,
        "a spinner outlived the timeout"
    );
    assert_unaffected(&server, &other).await;
}

#[tokio::test]
async fn cpu_limit_throttles() {
    let server = TestServer::start().await;
    let other = bystander(&server).await;
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
    assert_unaffected(&server, &other).await;
}
