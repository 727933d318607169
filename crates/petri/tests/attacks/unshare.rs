//! New namespaces from inside: `unshare -U` / `unshare -r` (a user namespace where the code is
//! root), mount and network namespaces, and the raw `unshare`/`setns`/`clone(CLONE_NEWUSER)`
//! syscalls. Contained by the seccomp filter (EPERM) and bubblewrap's `--disable-userns`
//! (`clone(CLONE_NEWUSER)` gets ENOSPC: the nested user namespace limit is zero).

use crate::helpers::*;
use crate::{SYSCALL_PRELUDE, assert_unaffected, bystander, python, sh};

const UNSHARE: &str = r#"
import os
CLONE_NEWUSER, CLONE_NEWNS, CLONE_NEWNET, SIGCHLD = 0x10000000, 0x20000, 0x40000000, 17
call("unshare_user", 272, CLONE_NEWUSER)
call("unshare_mount", 272, CLONE_NEWNS)
call("unshare_net", 272, CLONE_NEWNET)
call("setns", 308, os.open("/proc/self/ns/net", os.O_RDONLY), 0)
pid = libc.syscall(56, CLONE_NEWUSER | SIGCHLD, 0, 0, 0, 0)
if pid == 0:
    os._exit(0)
print("clone_newuser", pid, errno.errorcode.get(ctypes.get_errno(), ctypes.get_errno()))
"#;

#[tokio::test]
async fn new_namespaces_are_denied() {
    let server = TestServer::start().await;
    let other = bystander(&server).await;
    let id = server.sandbox().await;
    let output = sh(
        &server,
        &id,
        "unshare -U true 2>&1 || echo userns-denied; unshare -r id -u 2>&1 || echo root-denied; \
         unshare -n true 2>&1 || echo netns-denied",
    )
    .await;
    assert!(
        output.contains("unshare: unshare failed: Operation not permitted\nuserns-denied\n"),
        "{output}"
    );
    assert!(output.contains("root-denied"), "{output}");
    assert!(output.contains("netns-denied"), "{output}");
    assert!(!output.lines().any(|l| l == "0"), "became root: {output}");

    let output = python(&server, &id, &format!("{SYSCALL_PRELUDE}{UNSHARE}")).await;
    for denied in ["unshare_user", "unshare_mount", "unshare_net", "setns"] {
        assert!(
            output.contains(&format!("{denied} -1 EPERM")),
            "{denied}: {output}"
        );
    }
    // clone itself is allowed (it is how processes start): a new user namespace is refused by
    // the nested namespace limit bubblewrap sets to zero.
    assert!(output.contains("clone_newuser -1 ENOSPC"), "{output}");
    assert_unaffected(&server, &other).await;
}
