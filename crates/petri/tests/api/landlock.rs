//! Landlock, the second wall: every exec's first process confines itself to writing below
//! the workspace, /tmp and /dev/shm, whatever the mounts would allow.

use std::process::Command;

use crate::helpers::*;

fn init() -> &'static str {
    env!("CARGO_BIN_EXE_petri-init")
}

#[tokio::test]
async fn every_exec_starts_confined_and_languages_still_work() {
    let server = TestServer::start().await;
    let (_, health) = server.get_json("/health").await;
    let abi = health["isolation"]["landlock"]
        .as_i64()
        .expect("this kernel has Landlock");
    assert!(abi >= 1, "{health}");
    let id = server.sandbox().await;
    let result = server
        .exec(
            &id,
            "tr '\\0' ' ' < /proc/1/cmdline; echo; touch /sandbox/a /tmp/b /dev/shm/c && echo > /dev/null && python3 -c 'print(6*7)'",
        )
        .await;
    let output = result.done()["output"].as_str().unwrap().to_string();
    assert!(
        output.contains("petri-init --write /sandbox --write /tmp --write /dev/shm -- /bin/sh"),
        "{output}"
    );
    assert!(output.ends_with("42\n"), "{output}");
}

/// The init on its own, on the host: writes outside the listed directories are refused by
/// the kernel even where file permissions allow them.
#[test]
fn the_init_refuses_writes_outside_the_writable_directories() {
    let dir = tempfile::tempdir().unwrap();
    let (allowed, denied) = (dir.path().join("allowed"), dir.path().join("denied"));
    std::fs::create_dir(&allowed).unwrap();
    std::fs::create_dir(&denied).unwrap();
    let script = format!(
        "touch {a}/ok && echo allowed; touch {d}/no 2>&1; mkdir {d}/sub 2>&1; cat {a}/ok && echo read",
        a = allowed.display(),
        d = denied.display()
    );
    let out = Command::new(init())
        .arg("--write")
        .arg(&allowed)
        .args(["--", "/bin/sh", "-c", &script])
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(stdout.starts_with("allowed\n"), "{stdout}");
    assert_eq!(stdout.matches("Permission denied").count(), 2, "{stdout}");
    assert!(stdout.ends_with("read\n"), "{stdout}");
    assert!(allowed.join("ok").exists());
    assert_eq!(std::fs::read_dir(&denied).unwrap().count(), 0);
}

#[test]
fn the_init_fails_closed_without_a_command_or_with_a_bad_one() {
    let out = Command::new(init())
        .args(["--write", "/tmp", "--", "/nonexistent/program"])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(126));
    assert!(String::from_utf8_lossy(&out.stderr).contains("cannot run /nonexistent/program"));
    for args in [
        &[][..],
        &["--write", "/tmp"][..],
        &["--write", "/tmp", "--"][..],
        &["--bogus"][..],
    ] {
        let out = Command::new(init()).args(args).output().unwrap();
        assert_eq!(out.status.code(), Some(126), "{args:?}");
    }
}
