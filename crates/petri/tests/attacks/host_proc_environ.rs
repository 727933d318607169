//! Reading the host's `/proc/1/environ` (and every other process's) to steal the server's
//! environment. Contained by the pid namespace and a fresh `/proc`: pid 1 is the sandbox's
//! own init, started with a cleared environment (or closed to the sandbox's code), and no
//! host process is visible.

use crate::helpers::*;
use crate::{assert_unaffected, bystander, python, server_pid, unique};

const SCAN: &str = r#"
import os
needle = ("NEEDLE_HEAD" + "NEEDLE_TAIL").encode()
pids = sorted(int(p) for p in os.listdir("/proc") if p.isdigit())
print("pids", len(pids))
for pid in pids:
    for name in ("environ", "cmdline"):
        try:
            if needle in open(f"/proc/{pid}/{name}", "rb").read():
                print("leak", pid, name)
        except PermissionError:
            print("denied", pid, name)
print("init", open("/proc/1/comm").read().strip(), open("/proc/1/status").read().split("PPid:")[1].split()[0])
try:
    print("environ", repr(open("/proc/1/environ", "rb").read()))
except PermissionError:
    print("environ denied")
print("own environ", b"PATH=" in open("/proc/self/environ", "rb").read())
"#;

#[tokio::test]
async fn proc_1_is_the_sandboxs_own_init_without_server_environment() {
    let secret = unique("server-env");
    let server = TestServer::start_with(&[("PETRI_TEST_SECRET", &secret)]).await;
    // The secret really is in the server's environment on the host.
    let host_environ = std::fs::read(format!("/proc/{}/environ", server_pid(&server))).unwrap();
    assert!(String::from_utf8_lossy(&host_environ).contains(&secret));

    let other = bystander(&server).await;
    let id = server.sandbox().await;
    let (head, tail) = secret.split_at(secret.len() / 2);
    let script = SCAN
        .replace("NEEDLE_HEAD", head)
        .replace("NEEDLE_TAIL", tail);
    let output = python(&server, &id, &script).await;
    assert!(
        !output.contains("leak"),
        "server environment visible: {output}"
    );
    // The scan works: its own environment is readable (only pid 1 may be closed to it).
    assert!(output.contains("own environ True"), "{output}");
    assert!(
        output
            .lines()
            .filter(|l| l.starts_with("denied"))
            .all(|l| l.starts_with("denied 1 ")),
        "{output}"
    );
    // Only the exec's own few processes exist; pid 1 has no parent in this namespace and is
    // not the server.
    let pids: usize = output
        .lines()
        .find_map(|l| l.strip_prefix("pids "))
        .unwrap()
        .parse()
        .unwrap();
    assert!(pids < 10, "{output}");
    let init = output.lines().find(|l| l.starts_with("init ")).unwrap();
    assert!(init.ends_with(" 0") && !init.contains("petri"), "{output}");
    assert!(
        output.contains("\nenviron b''\n") || output.contains("\nenviron denied\n"),
        "pid 1 has an environment: {output}"
    );
    assert!(!output.contains("PETRI_"), "{output}");
    assert_unaffected(&server, &other).await;
}
