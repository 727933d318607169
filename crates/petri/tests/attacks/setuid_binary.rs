//! Setuid binaries: running the host's `su` and `passwd`, a setuid copy in the workspace and in
//! `/tmp`, and asking for uid 0 directly. Contained by no-new-privileges (setuid bits are
//! ignored on exec), an empty capability set including the bounding set, `nosuid` mounts, and
//! a user namespace with no root in it.

use crate::helpers::*;
use crate::{assert_unaffected, bystander, run, sh};

#[tokio::test]
async fn setuid_binaries_give_no_privilege() {
    let server = TestServer::start().await;
    let other = bystander(&server).await;
    let id = server.sandbox().await;
    let done = run(
        &server,
        &id,
        "su -c id root </dev/null 2>&1; echo su=$?; passwd </dev/null 2>&1; echo passwd=$?; \
         cp /usr/bin/id /sandbox/id && cp /usr/bin/id /tmp/id && chmod u+s /sandbox/id /tmp/id && \
         /sandbox/id -u && /tmp/id -u && ls -l /usr/bin/su | cut -c1-4; \
         python3 -c \"import os\ntry:\n  os.setuid(0)\nexcept OSError as e: print('setuid', e.strerror)\ntry:\n  os.setresgid(0, 0, 0)\nexcept OSError as e: print('setgid', e.strerror)\"; \
         grep -E '^(Uid|CapInh|CapPrm|CapEff|CapBnd|CapAmb|NoNewPrivs)' /proc/self/status; \
         grep -E ' /(sandbox|tmp) ' /proc/self/mountinfo",
    )
    .await;
    let output = done["output"].as_str().unwrap();
    assert!(!output.contains("uid=0"), "became root: {output}");
    assert!(!output.contains("su=0"), "su succeeded: {output}");
    assert!(!output.contains("passwd=0"), "passwd succeeded: {output}");
    // The setuid bit is there, and ignored.
    assert!(output.contains("\n1000\n1000\n-rws\n"), "{output}");
    // uid 0 does not exist in the sandbox's user namespace (EINVAL), or may not be taken.
    for call in ["setuid", "setgid"] {
        assert!(
            output.contains(&format!("{call} Invalid argument"))
                || output.contains(&format!("{call} Operation not permitted")),
            "{call}: {output}"
        );
    }
    assert!(output.contains("Uid:\t1000\t1000\t1000\t1000"), "{output}");
    for caps in ["CapInh", "CapPrm", "CapEff", "CapBnd", "CapAmb"] {
        assert!(
            output.contains(&format!("{caps}:\t0000000000000000")),
            "{caps}: {output}"
        );
    }
    assert!(output.contains("NoNewPrivs:\t1"), "{output}");
    let mounts: Vec<&str> = output
        .lines()
        .filter(|l| l.contains(" /sandbox ") || l.contains(" /tmp "))
        .collect();
    assert_eq!(mounts.len(), 2, "{output}");
    assert!(mounts.iter().all(|m| m.contains("nosuid")), "{mounts:?}");
    // A later exec is no different.
    assert_eq!(sh(&server, &id, "id -u").await, "1000\n");
    assert_unaffected(&server, &other).await;
}
