//! Reading the server's run logs: another sandbox's stored output under `<root>/logs`, by host
//! path and by searching the filesystem. Contained by the mount namespace: the logs directory
//! is never mounted into a sandbox.

use crate::helpers::*;
use crate::{assert_unaffected, bystander, sh, unique};

#[tokio::test]
async fn run_logs_are_not_reachable() {
    let server = TestServer::start().await;
    let other = bystander(&server).await;
    // A victim's run whose output is stored in the logs.
    let victim = server.sandbox().await;
    let secret = unique("log-secret");
    let (head, tail) = secret.split_at(secret.len() / 2);
    let done = server
        .exec(&victim, &format!("echo \"{head}\"\"{tail}\""))
        .await
        .done();
    let run_id = done["run_id"].as_str().unwrap().to_string();
    let log = server.root.join("logs").join(format!("{run_id}.log"));
    assert!(
        std::fs::read_to_string(&log).unwrap().contains(&secret),
        "the victim's output is in {}",
        log.display()
    );

    let id = server.sandbox().await;
    let logs = server.root.join("logs").display().to_string();
    let output = sh(
        &server,
        &id,
        &format!(
            "ls {logs} 2>&1; cat {logs}/{run_id}.log 2>&1; \
             echo found; find / \\( -path /proc -o -path /usr \\) -prune -o -name '{run_id}*' -print 2>/dev/null; \
             grep -rl -D skip --exclude-dir=proc --exclude-dir=usr \"{head}\"\"{tail}\" / 2>/dev/null; echo end"
        ),
    )
    .await;
    assert!(
        output.contains(&format!(
            "ls: cannot access '{logs}': No such file or directory"
        )),
        "{output}"
    );
    assert!(
        output.contains(&format!(
            "cat: {logs}/{run_id}.log: No such file or directory"
        )),
        "{output}"
    );
    assert!(
        !output.contains(&secret),
        "the victim's output leaked: {output}"
    );
    assert!(
        output.ends_with("found\nend\n"),
        "a log is reachable: {output}"
    );
    assert_unaffected(&server, &other).await;
}
