//! Signalling the server: SIGTERM, SIGINT, SIGHUP and SIGSTOP (a stopped server hangs every
//! client) sent from inside a sandbox to the server's real host pid, after looking for the
//! server among the processes the sandbox can see. Contained by the pid namespace: the
//! server's pid does not exist inside and no visible process is the server.

use crate::helpers::*;
use crate::{assert_unaffected, bystander, server_pid, sh};

#[tokio::test]
async fn the_server_cannot_be_signalled() {
    let server = TestServer::start().await;
    let other = bystander(&server).await;
    let id = server.sandbox().await;
    let pid = server_pid(&server);
    let output = sh(
        &server,
        &id,
        &format!(
            "for sig in TERM INT HUP STOP; do kill -s $sig {pid} 2>&1; echo $sig=$?; done; \
             test -e /proc/{pid} && echo visible || echo invisible; \
             for p in /proc/[0-9]*; do tr '\\0' ' ' < $p/cmdline 2>/dev/null | grep -q \"ser\"\"ve --bi\"\"nd\" && echo server at $p; done; echo end"
        ),
    )
    .await;
    for sig in ["TERM", "INT", "HUP", "STOP"] {
        assert!(output.contains(&format!("\n{sig}=1\n")), "{sig}: {output}");
    }
    assert_eq!(
        output.matches("kill: No such process").count(),
        4,
        "{output}"
    );
    assert!(output.ends_with("invisible\nend\n"), "{output}");
    // Still running (not stopped) on the host.
    let state = std::fs::read_to_string(format!("/proc/{pid}/status")).unwrap();
    let state = state.lines().find(|l| l.starts_with("State:")).unwrap();
    assert!(!state.contains("stopped"), "{state}");
    assert_unaffected(&server, &other).await;
}
