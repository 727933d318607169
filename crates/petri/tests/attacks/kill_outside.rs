//! Killing processes outside the sandbox: `kill -9 -1` (every process the uid may signal) and
//! `kill -9 <server pid>` with the server's real host pid. Contained by the pid namespace: only
//! the exec's own processes exist, so `-1` reaches just those, and the host pid is not there.

use std::time::Duration;

use crate::helpers::*;
use crate::{assert_unaffected, bystander, server_pid, sh, unique};

#[tokio::test]
async fn kill_reaches_only_the_sandboxs_own_processes() {
    let server = TestServer::start().await;
    let other = bystander(&server).await;
    let pid = server_pid(&server);
    // Another sandbox is running something while the attack happens.
    let victim = server.sandbox().await;
    let id = server.sandbox().await;
    let marker = unique("kill-victim");
    let victim_command = format!("sh -c 'sleep 3; true' {marker}; echo survived");
    let victim_run = server.exec(&victim, &victim_command);
    let attack = async {
        tokio::time::sleep(Duration::from_millis(1000)).await;
        assert!(host_process_with(&marker), "the victim's process runs");
        sh(
            &server,
            &id,
            &format!(
                "sleep 100 & \
                 kill -9 {pid} 2>&1; echo server=$?; \
                 kill -9 -1 2>&1; echo all=$?; wait $!; echo sibling=$?; \
                 printf visible; for p in /proc/[0-9]*; do printf ' %s' \"$(cat $p/comm 2>/dev/null)\"; done; echo"
            ),
        )
        .await
    };
    let (victim_run, output) = tokio::join!(victim_run, attack);
    assert!(output.contains("kill: No such process\n"), "{output}");
    assert!(output.contains("\nserver=1\n"), "{output}");
    assert!(output.contains("\nall=0\n"), "{output}");
    assert!(
        output.contains("\nsibling=137\n"),
        "own sibling killed: {output}"
    );
    let visible = output
        .lines()
        .find_map(|l| l.strip_prefix("visible"))
        .unwrap();
    assert!(
        visible
            .split_whitespace()
            .all(|comm| ["bwrap", "sh", "cat"].contains(&comm)),
        "processes outside the exec are visible: {visible}"
    );
    assert!(
        !visible.contains("petri") && !visible.contains("sleep"),
        "{visible}"
    );
    // The victim's run, the server process and everything else carry on.
    assert_eq!(victim_run.done()["output"], "survived\n");
    assert!(
        std::path::Path::new(&format!("/proc/{pid}")).exists(),
        "the server died"
    );
    assert_eq!(server_pid(&server), pid);
    assert_unaffected(&server, &other).await;
}
