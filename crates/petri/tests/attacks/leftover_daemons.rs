//! Leftover daemons: background jobs, `setsid`, `nohup` and double-forked daemons that try to
//! outlive their exec, also when the exec times out. Contained by the pid namespace (killing
//! its init, bwrap, kills every process in it) and `--die-with-parent`.

use std::time::Duration;

use serde_json::json;

use crate::helpers::*;
use crate::{assert_unaffected, bystander};

#[tokio::test]
async fn every_process_of_an_exec_dies_with_it() {
    let server = TestServer::start().await;
    let other = bystander(&server).await;
    let id = server.sandbox().await;
    let marker = format!("petri-daemon-{}", std::process::id());
    let command = format!(
        "sleep 300 & setsid sleep 301 & (nohup sleep 302 >/dev/null 2>&1 &); \
         setsid nohup sh -c 'sleep 1000; true' {marker}-nohup >/dev/null 2>&1 & \
         python3 -c \"import os,time\nif os.fork()==0:\n  os.setsid()\n  time.sleep(303)\" & echo started # {marker}"
    );
    let done = server.exec(&id, &command).await.done();
    assert_eq!(done["output"], "started\n");
    assert!(
        eventually(Duration::from_secs(3), async || {
            !host_process_with(&marker)
        })
        .await,
        "daemonised children outlived their exec"
    );
    // A timed-out exec takes its whole tree too.
    times_out_leaving_nothing(
        &server,
        &id,
        "sleep 300 & setsid sleep 301 & sleep 302",
        "petri-timeout",
    )
    .await;
    // A shell that ignores SIGTERM and waits on a child in a session of its own (this left
    // bubblewrap's reaper running once, when only bubblewrap was killed).
    times_out_leaving_nothing(
        &server,
        &id,
        "trap '' TERM; setsid sleep 304 & wait",
        "petri-waiter",
    )
    .await;
    assert_unaffected(&server, &other).await;
}

/// Runs `command` (marked with `tag` on its command line) with a 1 s timeout and checks that
/// nothing of it is left on the host afterwards.
async fn times_out_leaving_nothing(server: &TestServer, id: &str, command: &str, tag: &str) {
    let marker = format!("{tag}-{}", std::process::id());
    let command = format!("{command} # {marker}");
    let done = server
        .exec_body(id, json!({"command": command, "timeout": 1}))
        .await
        .done();
    assert_eq!(done["status"], "timed_out");
    assert!(
        eventually(Duration::from_secs(3), async || {
            !host_process_with(&marker)
        })
        .await,
        "{command} outlived its timed-out exec"
    );
}
