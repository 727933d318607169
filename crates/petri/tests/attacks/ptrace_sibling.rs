//! Tracing a sibling process: `ptrace(PTRACE_ATTACH / PTRACE_SEIZE / PTRACE_TRACEME)`,
//! `process_vm_readv`, and reading its memory through `/proc/<pid>/mem`. The syscalls are
//! contained by the seccomp filter (EPERM), and there is nothing of another sandbox to trace:
//! the pid namespace shows only the exec's own processes.

use crate::helpers::*;
use crate::{SYSCALL_PRELUDE, assert_unaffected, bystander, python};

const TRACE: &str = r#"
import subprocess, time
sibling = subprocess.Popen(["python3", "-c", "import time; secret = 'SIBLING-' + 'SECRET'; time.sleep(30)"])
time.sleep(0.5)
call("ptrace_traceme", 101, 0, 0, 0, 0)
call("ptrace_attach", 101, 16, sibling.pid, 0, 0)
call("ptrace_seize", 101, 0x4206, sibling.pid, 0, 0)
call("process_vm_readv", 310, sibling.pid, 0, 0, 0, 0, 0)
status = open(f"/proc/{sibling.pid}/status").read()
print("tracer", status.split("TracerPid:")[1].split()[0], "state", status.split("State:")[1].split()[0])
sibling.kill()
"#;

#[tokio::test]
async fn ptrace_of_a_sibling_is_denied() {
    let server = TestServer::start().await;
    let other = bystander(&server).await;
    let id = server.sandbox().await;
    let output = python(&server, &id, &format!("{SYSCALL_PRELUDE}{TRACE}")).await;
    for denied in [
        "ptrace_traceme",
        "ptrace_attach",
        "ptrace_seize",
        "process_vm_readv",
    ] {
        assert!(
            output.contains(&format!("{denied} -1 EPERM")),
            "{denied}: {output}"
        );
    }
    assert!(
        output.contains("tracer 0 state S"),
        "the sibling was traced: {output}"
    );
    assert_unaffected(&server, &other).await;
}

const READ_MEMORY: &str = r#"
import errno, subprocess, time
sibling = subprocess.Popen(["python3", "-c", "import time; secret = 'SIBLING-' + 'SECRET'; time.sleep(30)"])
time.sleep(0.5)
def read(pid, needle):
    try:
        mem = open(f"/proc/{pid}/mem", "rb")
    except OSError as e:
        return errno.errorcode[e.errno]
    for line in open(f"/proc/{pid}/maps"):
        span, perms = line.split()[:2]
        if perms[0] != "r":
            continue
        lo, hi = (int(x, 16) for x in span.split("-"))
        try:
            mem.seek(lo)
            if needle in mem.read(hi - lo):
                return "read"
        except OSError:
            pass
    return "opened"
print("sibling", read(sibling.pid, b"SIBLING-SECRET"))
print("init", read(1, b"--args"))
sibling.kill()
"#;

/// `/proc/<pid>/mem` gives what `ptrace` and `process_vm_readv` are denied for.
#[tokio::test]
#[ignore = "NOT CONTAINED: /proc/<pid>/mem of a sibling process opens and reads its \
            memory, although ptrace and process_vm_readv are denied by seccomp"]
async fn reading_a_siblings_memory_through_proc_is_denied() {
    let server = TestServer::start().await;
    let other = bystander(&server).await;
    let id = server.sandbox().await;
    let output = python(&server, &id, READ_MEMORY).await;
    for who in ["sibling", "init"] {
        let line = output
            .lines()
            .find(|l| l.starts_with(who))
            .unwrap_or_else(|| panic!("{output}"));
        assert!(
            line.ends_with(" EPERM") || line.ends_with(" EACCES"),
            "{who}'s memory is readable: {output}"
        );
    }
    assert_unaffected(&server, &other).await;
}
