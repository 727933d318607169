//! Per-sandbox host identities: as root, each sandbox runs as its own unprivileged host uid,
//! owns its workspace alone, and an escaped process could read neither another sandbox's
//! files nor the server's state.

use std::os::unix::fs::MetadataExt;
use std::os::unix::process::CommandExt;
use std::process::Command;

use serde_json::json;

use crate::helpers::*;

/// Runs `sh -c script` on the host as `uid` (what a process that escaped its sandbox could do).
fn as_escaped(uid: u32, script: &str) -> std::process::Output {
    Command::new("/bin/sh")
        .args(["-c", script])
        .uid(uid)
        .gid(uid)
        .output()
        .unwrap()
}

#[tokio::test]
async fn each_sandbox_runs_as_its_own_host_uid_and_owns_only_its_workspace() {
    let server = TestServer::start().await;
    let (_, health) = server.get_json("/health").await;
    assert_eq!(health["identities"]["mode"], "per-sandbox", "{health}");
    assert_eq!(health["degraded"], json!([]), "{health}");

    let first = server.sandbox().await;
    let second = server.sandbox().await;
    server
        .upload(&first, "notes/uploaded.txt", b"from the api\n".to_vec())
        .await;
    // Code can change what the API uploaded (it is the sandbox's file, not root's).
    let done = server
        .exec(&first, "echo appended >> notes/uploaded.txt && echo secret > mine.txt && cat notes/uploaded.txt")
        .await
        .done();
    assert_eq!(done["output"], "from the api\nappended\n", "{done}");
    let result = server.exec(&second, "echo other > theirs.txt").await;
    assert_eq!(result.done()["exit_code"], 0, "{}", result.raw);

    let owner = |id: &str, path: &str| {
        std::fs::symlink_metadata(server.workspace(id).join(path))
            .unwrap()
            .uid()
    };
    let uid = owner(&first, "mine.txt");
    assert!(
        uid >= 1_000_000_000,
        "files belong to a sandbox uid, not root: {uid}"
    );
    assert_eq!(owner(&first, "notes/uploaded.txt"), uid);
    assert_eq!(owner(&first, "notes"), uid);
    let other = owner(&second, "theirs.txt");
    assert!(other >= 1_000_000_000 && other != uid, "{uid} vs {other}");
    let mode = std::fs::metadata(server.workspace(&first)).unwrap().mode();
    assert_eq!(mode & 0o777, 0o700);

    // A process escaped from the first sandbox reaches nothing else on the host.
    let root = server
        .workspace(&first)
        .parent()
        .unwrap()
        .parent()
        .unwrap()
        .to_path_buf();
    let theirs = server.workspace(&second).join("theirs.txt");
    for target in [
        format!("cat {}", theirs.display()),
        format!("ls {}", server.workspace(&second).display()),
        format!("ls {}/sandboxes", root.display()),
        format!("ls {}", root.display()),
        format!("cat {}/registry.db", root.display()),
        format!("ls {}/logs", root.display()),
        format!("touch {}/sandboxes/planted", root.display()),
        // Each disk image is a whole workspace.
        format!("ls {}/disks", root.display()),
        format!(
            "head -c 4096 {}/disks/{second}.ext4 > /dev/null",
            root.display()
        ),
    ] {
        let out = as_escaped(uid, &target);
        assert!(
            !out.status.success(),
            "an escaped sandbox process could run {target:?}: {}",
            String::from_utf8_lossy(&out.stdout)
        );
        assert!(
            String::from_utf8_lossy(&out.stderr).contains("Permission denied"),
            "{target:?}: {}",
            String::from_utf8_lossy(&out.stderr)
        );
    }
    // Its own workspace stays its own.
    assert!(
        as_escaped(
            uid,
            &format!("cat {}/mine.txt", server.workspace(&first).display())
        )
        .status
        .success()
    );
}

#[tokio::test]
async fn identities_survive_a_restart_and_are_never_reused() {
    let server = TestServer::start().await;
    let first = server.sandbox().await;
    server.exec(&first, "touch a").await;
    let uid = std::fs::metadata(server.workspace(&first).join("a"))
        .unwrap()
        .uid();
    assert_eq!(server.delete(&format!("/v1/sandboxes/{first}")).await, 204);
    let server = server.crash_and_restart().await;
    let next = server.sandbox().await;
    server.exec(&next, "touch b").await;
    let next_uid = std::fs::metadata(server.workspace(&next).join("b"))
        .unwrap()
        .uid();
    assert!(
        next_uid > uid,
        "a deleted sandbox's uid is not handed out again: {uid} then {next_uid}"
    );
}

#[tokio::test]
async fn an_unprivileged_server_says_sandboxes_share_its_uid() {
    let server = TestServer::start_as_nobody().await;
    let (_, health) = server.get_json("/health").await;
    assert_eq!(health["identities"]["mode"], "shared", "{health}");
    assert_eq!(health["identities"]["degraded"], true);
    assert!(
        health["degraded"]
            .as_array()
            .unwrap()
            .contains(&json!("identities")),
        "{health}"
    );
}
