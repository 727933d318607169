//! Fork bomb: a shell `bomb | bomb &` recursion and a Python fork loop. Contained by the
//! sandbox's cgroup `pids.max` (here 32): forks fail with EAGAIN, the exec still ends, and the
//! sandbox can start processes again afterwards.

use serde_json::json;

use crate::helpers::*;
use crate::{assert_unaffected, bystander};

#[tokio::test]
async fn fork_bomb_is_contained() {
    let server = TestServer::start().await;
    let other = bystander(&server).await;
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
    assert_unaffected(&server, &other).await;
}
