//! Reading the server's database: `registry.db` (and its WAL) under the server's state root,
//! by host path, by SQLite, and by searching the filesystem. Contained by the mount namespace:
//! the state root is never mounted into a sandbox, so the host path does not exist inside.

use crate::helpers::*;
use crate::{assert_unaffected, bystander, sh};

#[tokio::test]
async fn registry_db_is_not_reachable() {
    let server = TestServer::start().await;
    let other = bystander(&server).await;
    let id = server.sandbox().await;
    let root = server.root.display().to_string();
    assert!(server.root.join("registry.db").is_file());
    let output = sh(
        &server,
        &id,
        &format!(
            "ls {root} 2>&1; cat {root}/registry.db 2>&1 >/tmp/db; cat {root}/registry.db-wal 2>&1 >/tmp/wal; \
             head -c 40 /tmp/db /tmp/wal; \
             stat {root} 2>&1; \
             python3 -c \"import sqlite3; print(sqlite3.connect('file:{root}/registry.db?mode=ro', uri=True).execute('select * from sqlite_master').fetchall())\" 2>&1 | tail -1; \
             echo found; find / \\( -path /proc -o -path /usr \\) -prune -o -name 'registry.db*' -print 2>/dev/null; echo end"
        ),
    )
    .await;
    for path in [
        root.clone(),
        format!("{root}/registry.db"),
        format!("{root}/registry.db-wal"),
    ] {
        assert!(
            output.contains(&format!("'{path}': No such file or directory"))
                || output.contains(&format!("{path}: No such file or directory")),
            "{path} must not exist in the sandbox: {output}"
        );
    }
    assert!(
        output.contains("sqlite3.OperationalError: unable to open database file"),
        "{output}"
    );
    assert!(!output.contains("SQLite"), "{output}");
    assert!(
        output.ends_with("found\nend\n"),
        "a database is reachable: {output}"
    );
    // /proc/1 (the sandbox's init) does not reveal the host path either.
    let cmdline = sh(&server, &id, "tr '\\0' ' ' < /proc/1/cmdline").await;
    assert!(!cmdline.contains(&root), "{cmdline}");
    assert_unaffected(&server, &other).await;
}

/// The state root's host path is information an attacker can use (it names the registry and
/// every workspace): nothing the sandbox can read should spell it.
#[tokio::test]
#[ignore = "NOT CONTAINED: /proc/self/mountinfo names the host source of the bind mounts \
            taken from the state root (e.g. <root>/tools/petri on /opt/petri/bin/petri-init, \
            earlier <root>/sandboxes/<id> on /sandbox), so the sandbox learns the root's path"]
async fn the_state_roots_host_path_is_not_revealed() {
    let server = TestServer::start().await;
    let other = bystander(&server).await;
    let id = server.sandbox().await;
    let root = server.root.display().to_string();
    let script = r#"
import sys
def memory(pid):
    out = b""
    try:
        mem = open(f"/proc/{pid}/mem", "rb")
        for line in open(f"/proc/{pid}/maps"):
            span, perms = line.split()[:2]
            if perms[0] != "r":
                continue
            lo, hi = (int(x, 16) for x in span.split("-"))
            try:
                mem.seek(lo)
                out += mem.read(hi - lo)
            except OSError:
                pass
    except OSError:
        pass
    return out
needle = sys.argv[1].encode()
for name in ["/proc/self/mountinfo", "/proc/1/mountinfo", "/proc/self/cgroup", "/proc/1/cmdline", "/proc/1/environ"]:
    try:
        print(name, needle in open(name, "rb").read())
    except PermissionError:
        print(name, "denied")
print("/proc/1/mem", needle in memory(1))
"#;
    let (status, _) = server
        .upload(&id, "leak.py", script.as_bytes().to_vec())
        .await;
    assert_eq!(status, 201);
    // The needle is passed split so that the command line itself does not contain it.
    let (head, tail) = root.split_at(root.len() / 2);
    let output = sh(
        &server,
        &id,
        &format!("python3 /sandbox/leak.py \"{head}\"\"{tail}\""),
    )
    .await;
    assert!(!output.contains("True"), "the host path leaks: {output}");
    assert_eq!(output.lines().count(), 6, "{output}");
    assert_unaffected(&server, &other).await;
}
