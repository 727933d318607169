//! Reading `/sys`: host devices, network interfaces, cgroup files and kernel knobs. Contained
//! by the mount namespace: `/sys` is not mounted at all, and mounting a sysfs is refused.

use crate::helpers::*;
use crate::{assert_unaffected, bystander, run};

#[tokio::test]
async fn sys_is_absent() {
    let server = TestServer::start().await;
    let other = bystander(&server).await;
    let id = server.sandbox().await;
    let done = run(
        &server,
        &id,
        "ls -A /sys 2>&1; ls /sys/class/net 2>&1; cat /sys/fs/cgroup/memory/memory.limit_in_bytes 2>&1; \
         echo 1 > /sys/kernel/mm/ksm/run 2>&1; mkdir -p /tmp/sys && mount -t sysfs sysfs /tmp/sys 2>&1; \
         ls -A /tmp/sys; echo end",
    )
    .await;
    let output = done["output"].as_str().unwrap();
    assert!(
        output.starts_with(
            "ls: cannot access '/sys': No such file or directory\n\
             ls: cannot access '/sys/class/net': No such file or directory\n\
             cat: /sys/fs/cgroup/memory/memory.limit_in_bytes: No such file or directory\n"
        ),
        "{output}"
    );
    assert!(
        output.contains("/sys/kernel/mm/ksm/run: Directory nonexistent"),
        "{output}"
    );
    assert!(
        output.contains("must be superuser to use mount"),
        "{output}"
    );
    let sysfs_entries = [
        "block", "bus", "class", "devices", "firmware", "kernel", "module",
    ];
    assert!(
        !output.lines().any(|l| sysfs_entries.contains(&l)),
        "a sysfs is listed: {output}"
    );
    assert!(output.ends_with("\nend\n"), "{output}");
    assert_unaffected(&server, &other).await;
}
