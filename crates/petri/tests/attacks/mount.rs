//! Mounting: `mount(8)` of a tmpfs and a bind mount, and the raw `mount`, `umount2`,
//! `pivot_root` and new mount API (`fsopen`, `open_tree`, `move_mount`) syscalls. Contained by
//! the seccomp filter (EPERM) on top of having no capabilities: the mount table is unchanged.

use crate::helpers::*;
use crate::{SYSCALL_PRELUDE, assert_unaffected, bystander, python};

const MOUNT: &str = r#"
import subprocess
before = open("/proc/self/mountinfo").read()
for args in (["mount", "-t", "tmpfs", "none", "/sandbox"], ["mount", "--bind", "/sandbox", "/tmp"]):
    r = subprocess.run(args, capture_output=True, text=True)
    print(args[1], r.returncode, "superuser" in r.stderr)
call("mount", 165, ctypes.cast(ctypes.c_char_p(b"none"), ctypes.c_void_p).value,
     ctypes.cast(ctypes.c_char_p(b"/sandbox"), ctypes.c_void_p).value,
     ctypes.cast(ctypes.c_char_p(b"tmpfs"), ctypes.c_void_p).value, 0, 0)
call("umount2", 166, ctypes.cast(ctypes.c_char_p(b"/tmp"), ctypes.c_void_p).value, 2)
call("pivot_root", 155, ctypes.cast(ctypes.c_char_p(b"/sandbox"), ctypes.c_void_p).value,
     ctypes.cast(ctypes.c_char_p(b"/sandbox"), ctypes.c_void_p).value)
call("open_tree", 428, -100, ctypes.cast(ctypes.c_char_p(b"/usr"), ctypes.c_void_p).value, 1)
call("move_mount", 429, -1, 0, -100, 0, 0)
call("fsopen", 430, ctypes.cast(ctypes.c_char_p(b"tmpfs"), ctypes.c_void_p).value, 0)
print("unchanged", open("/proc/self/mountinfo").read() == before)
"#;

#[tokio::test]
async fn mount_is_denied() {
    let server = TestServer::start().await;
    let other = bystander(&server).await;
    let id = server.sandbox().await;
    let output = python(&server, &id, &format!("{SYSCALL_PRELUDE}{MOUNT}")).await;
    assert!(output.contains("-t 32 True\n--bind 32 True\n"), "{output}");
    for denied in [
        "mount",
        "umount2",
        "pivot_root",
        "open_tree",
        "move_mount",
        "fsopen",
    ] {
        assert!(
            output.contains(&format!("\n{denied} -1 EPERM\n")),
            "{denied}: {output}"
        );
    }
    assert!(output.ends_with("unchanged True\n"), "{output}");
    assert_unaffected(&server, &other).await;
}
