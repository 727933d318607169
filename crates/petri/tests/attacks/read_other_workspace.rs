//! Reading another sandbox's workspace: by its host path, and through `/proc` (the `cwd` and
//! `root` links of the other sandbox's running processes, `/proc/1/root`). Contained by the
//! mount namespace (only the sandbox's own workspace is mounted, at `/sandbox`) and the pid
//! namespace (the other sandbox's processes are not in this `/proc`).

use std::time::Duration;

use crate::helpers::*;
use crate::{assert_unaffected, bystander, sh, unique};

const PROC_SCAN: &str = r#"
import os, sys
marker = sys.argv[1] + sys.argv[2]
for pid in filter(str.isdigit, os.listdir("/proc")):
    try:
        if marker.encode() in open(f"/proc/{pid}/cmdline", "rb").read():
            print("visible", pid)
    except OSError:
        pass
    for path in (f"/proc/{pid}/cwd/secret.txt", f"/proc/{pid}/root/sandbox/secret.txt"):
        try:
            print("read", path, open(path).read())
        except OSError:
            pass
print("scanned")
"#;

#[tokio::test]
async fn another_workspace_is_unreachable_by_path_and_through_proc() {
    let server = TestServer::start().await;
    let other = bystander(&server).await;
    let victim = server.sandbox().await;
    let secret = unique("tenant-secret");
    let (status, _) = server
        .upload(&victim, "secret.txt", secret.clone().into_bytes())
        .await;
    assert_eq!(status, 201);
    let marker = unique("victim-proc");
    let (head, tail) = marker.split_at(marker.len() / 2);
    let id = server.sandbox().await;
    let (status, _) = server
        .upload(&id, "scan.py", PROC_SCAN.as_bytes().to_vec())
        .await;
    assert_eq!(status, 201);
    let host = server.workspace(&victim).display().to_string();
    let sandboxes = server.root.join("sandboxes").display().to_string();

    // The victim has a process running in its workspace while the attacker looks for it.
    let victim_command = format!("cd /sandbox && sh -c 'sleep 4; true' {marker}; cat secret.txt");
    let victim_run = server.exec(&victim, &victim_command);
    let attack = async {
        tokio::time::sleep(Duration::from_millis(1000)).await;
        assert!(host_process_with(&marker), "the victim's process runs");
        sh(
            &server,
            &id,
            &format!(
                "cat {host}/secret.txt 2>&1; ls {sandboxes} 2>&1; \
                 cat /proc/1/root{host}/secret.txt 2>&1; \
                 python3 /sandbox/scan.py {head} {tail}"
            ),
        )
        .await
    };
    let (victim_run, output) = tokio::join!(victim_run, attack);

    assert!(
        output.contains(&format!(
            "cat: {host}/secret.txt: No such file or directory"
        )),
        "{output}"
    );
    assert!(
        output.contains(&format!(
            "ls: cannot access '{sandboxes}': No such file or directory"
        )),
        "{output}"
    );
    let through_init = format!("cat: /proc/1/root{host}/secret.txt: ");
    assert!(
        output.contains(&format!("{through_init}No such file or directory"))
            || output.contains(&format!("{through_init}Permission denied")),
        "{output}"
    );
    assert!(
        !output.contains(&secret),
        "the other tenant's file leaked: {output}"
    );
    assert!(
        !output.contains("visible"),
        "the victim's process is visible: {output}"
    );
    assert!(!output.contains("read "), "{output}");
    assert!(output.ends_with("scanned\n"), "{output}");
    // The victim ran undisturbed and still has its file.
    assert_eq!(victim_run.done()["output"], secret.as_str());
    assert_unaffected(&server, &other).await;
}
