//! What sandboxed code starts with: a clean environment, no descriptors inherited from the
//! server, and a seccomp filter that still lets ordinary programs fork and spawn threads.
//! Attacks on the isolation (network, host files, other sandboxes, privileges, leftover
//! processes, syscalls) are in `tests/attacks/`.

use crate::helpers::*;

#[tokio::test]
async fn no_privileges_and_a_clean_environment() {
    let server = TestServer::start_with(&[("PETRI_TEST_SECRET", "hunter2")]).await;
    let id = server.sandbox().await;
    let done = server.exec(&id, "id -u; hostname; env").await.done();
    let output = done["output"].as_str().unwrap();
    assert!(output.starts_with("1000\nsandbox\n"), "{output}");
    assert!(
        !output.contains("hunter2"),
        "server environment leaked: {output}"
    );
    assert!(!output.contains("PETRI_"), "{output}");
    let env = env_map(output);
    assert_eq!(env["HOME"], "/sandbox");
    assert_eq!(env["PYTHONUNBUFFERED"], "1");
    assert!(
        env.contains_key("SSL_CERT_FILE"),
        "CA bundle variables are passed: {output}"
    );
    assert!(std::path::Path::new(&env["SSL_CERT_FILE"]).exists());
}

#[tokio::test]
async fn descriptors_inherited_by_the_server_do_not_reach_sandboxes() {
    let server = TestServer::start_with_leaked_fd().await;
    let id = server.sandbox().await;
    let done = server
        .exec(&id, "ls /proc/self/fd | tr '\\n' ' '; cat <&7 2>&1")
        .await
        .done();
    let output = done["output"].as_str().unwrap();
    // The shell's own listing fd (3) may appear; 7 must not.
    assert!(!output.split_whitespace().any(|fd| fd == "7"), "{output}");
    assert!(output.contains("Bad file descriptor"), "{output}");
}

#[tokio::test]
async fn kernel_attack_surface_is_filtered_by_seccomp() {
    let server = TestServer::start().await;
    let id = server.sandbox().await;
    let probe = r#"
import ctypes, errno, subprocess, threading
libc = ctypes.CDLL(None, use_errno=True)
def call(name, nr, *args):
    result = libc.syscall(nr, *args)
    print(name, result, errno.errorcode.get(ctypes.get_errno(), ctypes.get_errno()))
call("io_uring_setup", 425, 1, 0)
call("clone3", 435, 0, 0)
print("seccomp", open("/proc/self/status").read().split("Seccomp:")[1].split()[0])
print(subprocess.run(["echo", "fork ok"], capture_output=True, text=True).stdout.strip())
t = threading.Thread(target=lambda: print("thread ok")); t.start(); t.join()
"#;
    server
        .upload(&id, "probe.py", probe.as_bytes().to_vec())
        .await;
    let done = server.exec(&id, "python probe.py").await.done();
    let output = done["output"].as_str().unwrap();
    assert!(output.contains("io_uring_setup -1 EPERM"), "{output}");
    // clone3 says "not implemented", so C libraries fall back to clone.
    assert!(output.contains("clone3 -1 ENOSYS"), "{output}");
    assert!(output.contains("seccomp 2"), "{output}");
    assert!(output.contains("fork ok\nthread ok"), "{output}");
}
