//! What sandboxed code can see and do: no network, no host secrets, no other sandboxes,
//! no capabilities, and nothing left running after its exec.

use serde_json::json;

use crate::helpers::*;

#[tokio::test]
async fn no_network_beyond_loopback() {
    let server = TestServer::start().await;
    let id = server.sandbox().await;
    let done = server
        .exec(
            &id,
            "ls /sys/class/net 2>&1; cat /proc/net/dev | tail -n +3 | cut -d: -f1 | tr -d ' '; \
             python3 -c \"import socket\ntry:\n  socket.create_connection(('1.1.1.1', 80), timeout=3)\nexcept OSError as e: print('tcp', e.errno)\"; \
             python3 -c \"import socket\ntry:\n  socket.getaddrinfo('pypi.org', 443)\nexcept OSError as e: print('dns failed')\"",
        )
        .await
        .done();
    let output = done["output"].as_str().unwrap();
    assert!(
        output.contains("No such file or directory"),
        "no /sys: {output}"
    );
    assert!(output.contains("\nlo\n"), "{output}");
    assert!(!output.contains("eth0"), "{output}");
    assert!(
        output.contains("tcp 101"),
        "network unreachable expected: {output}"
    );
    assert!(output.contains("dns failed"), "{output}");
}

#[tokio::test]
async fn no_privileges_and_a_clean_environment() {
    let server = TestServer::start_with(&[("PETRI_TEST_SECRET", "hunter2")]).await;
    let id = server.sandbox().await;
    let done = server
        .exec(&id, "grep -E '^(CapEff|CapBnd|NoNewPrivs)' /proc/self/status; id -u; hostname; env; unshare -U true 2>&1 || echo userns-denied")
        .await
        .done();
    let output = done["output"].as_str().unwrap();
    assert!(output.contains("CapEff:\t0000000000000000"), "{output}");
    assert!(output.contains("CapBnd:\t0000000000000000"), "{output}");
    assert!(output.contains("NoNewPrivs:\t1"), "{output}");
    assert!(output.contains("\n1000\nsandbox\n"), "{output}");
    assert!(output.contains("userns-denied"), "{output}");
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
async fn host_is_read_only_and_private_parts_are_invisible() {
    let server = TestServer::start().await;
    let id = server.sandbox().await;
    let other = server.sandbox().await;
    std::fs::write(server.workspace(&other).join("secret.txt"), "other tenant").unwrap();
    let root = server.root.display().to_string();
    let command = format!(
        "touch /usr/x /etc/x /x 2>&1; ls {root} 2>&1; cat {root}/sandboxes/{other}/secret.txt 2>&1; \
         cat {root}/registry.db 2>&1 | head -c 20; ls /root /home 2>&1; ls /etc; echo tmp > /tmp/mine; \
         grep -c secret /proc/1/cmdline || true"
    );
    let done = server.exec(&id, &command).await.done();
    let output = done["output"].as_str().unwrap();
    for path in ["/usr/x", "/etc/x", "/x"] {
        assert!(
            output.contains(&format!(
                "touch: cannot touch '{path}': Read-only file system"
            )),
            "{output}"
        );
    }
    assert!(!output.contains("other tenant"), "{output}");
    assert!(!output.contains("SQLite"), "{output}");
    assert!(!output.contains("shadow"), "only a minimal /etc: {output}");
    // /proc/1/cmdline must not reveal host paths.
    let done = server
        .exec(&id, "tr '\\0' ' ' < /proc/1/cmdline")
        .await
        .done();
    assert!(!done["output"].as_str().unwrap().contains(&root), "{done}");
    // Each exec gets a fresh /tmp.
    let done = server.exec(&id, "cat /tmp/mine 2>&1").await.done();
    assert!(
        done["output"].as_str().unwrap().contains("No such file"),
        "{done}"
    );
}

#[tokio::test]
async fn every_process_of_an_exec_dies_with_it() {
    let server = TestServer::start().await;
    let id = server.sandbox().await;
    let marker = format!("petri-daemon-{}", std::process::id());
    let command = format!(
        "sleep 300 & setsid sleep 301 & (nohup sleep 302 >/dev/null 2>&1 &); \
         python3 -c \"import os,time\nif os.fork()==0:\n  os.setsid()\n  time.sleep(303)\" & echo started # {marker}"
    );
    let done = server.exec(&id, &command).await.done();
    assert_eq!(done["output"], "started\n");
    assert!(
        eventually(std::time::Duration::from_secs(3), async || {
            !host_process_with(&marker)
        })
        .await,
        "daemonised children outlived their exec"
    );
    // A timed-out exec takes its whole tree too.
    let marker = format!("petri-timeout-{}", std::process::id());
    let command = format!("sleep 300 & setsid sleep 301 & sleep 302 # {marker}");
    let done = server
        .exec_body(&id, json!({"command": command, "timeout": 1}))
        .await
        .done();
    assert_eq!(done["status"], "timed_out");
    assert!(
        eventually(std::time::Duration::from_secs(3), async || {
            !host_process_with(&marker)
        })
        .await
    );
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
call("ptrace", 101, 0, 0, 0, 0)
call("keyctl", 250, 0, 0, 0, 0)
call("bpf", 321, 0, 0, 0)
call("io_uring_setup", 425, 1, 0)
call("unshare", 272, 0x10000000)
call("mount", 165, 0, 0, 0, 0, 0)
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
    for denied in [
        "ptrace",
        "keyctl",
        "bpf",
        "io_uring_setup",
        "unshare",
        "mount",
    ] {
        assert!(
            output.contains(&format!("{denied} -1 EPERM")),
            "{denied}: {output}"
        );
    }
    // clone3 says "not implemented", so C libraries fall back to clone.
    assert!(output.contains("clone3 -1 ENOSYS"), "{output}");
    assert!(output.contains("seccomp 2"), "{output}");
    assert!(output.contains("fork ok\nthread ok"), "{output}");
}
