//! Writing outside the workspace: `/`, `/usr`, `/etc`, `/opt`, `/home`, `/root`, overwriting
//! `/etc/passwd` and a system binary, and planting files in `/tmp` and `/dev/shm`. Contained by
//! the mount namespace: the root and every host directory are read-only (or absent), and
//! `/tmp` and `/dev/shm` are private tmpfs mounts that die with the exec.

use std::path::Path;

use crate::helpers::*;
use crate::{assert_unaffected, bystander, run, unique};

#[tokio::test]
async fn host_directories_are_read_only_or_absent() {
    let server = TestServer::start().await;
    let other = bystander(&server).await;
    let id = server.sandbox().await;
    let m = unique("write");
    let passwd_before = std::fs::read("/etc/passwd").unwrap();
    let done = run(
        &server,
        &id,
        &format!(
            "touch /usr/{m} /etc/{m} /{m} /opt/{m} 2>&1; mkdir /{m}.d 2>&1; \
             touch /home/{m} /root/{m} 2>&1; echo pwned >> /etc/passwd 2>&1; \
             cp /bin/sh /usr/bin/python3 2>&1; \
             echo tmp > /tmp/{m} && echo shm > /dev/shm/{m} && echo private-ok"
        ),
    )
    .await;
    let output = done["output"].as_str().unwrap();
    for path in [
        format!("/usr/{m}"),
        format!("/etc/{m}"),
        format!("/{m}"),
        format!("/opt/{m}"),
    ] {
        assert!(
            output.contains(&format!(
                "touch: cannot touch '{path}': Read-only file system"
            )),
            "{path}: {output}"
        );
    }
    assert!(
        output.contains(&format!("/{m}.d’: Read-only file system")),
        "{output}"
    );
    for path in [format!("/home/{m}"), format!("/root/{m}")] {
        assert!(
            output.contains(&format!(
                "touch: cannot touch '{path}': No such file or directory"
            )),
            "{path}: {output}"
        );
    }
    assert!(
        output.contains("/etc/passwd: Read-only file system"),
        "{output}"
    );
    assert!(
        output.contains("cp: cannot create regular file '/usr/bin/python3': Read-only file system"),
        "{output}"
    );
    assert!(
        output.contains("private-ok"),
        "/tmp and /dev/shm are writable: {output}"
    );

    // Nothing appeared on the host, and the host's files are unchanged.
    for dir in [
        "/usr", "/etc", "/", "/opt", "/home", "/root", "/tmp", "/dev/shm",
    ] {
        let path = Path::new(dir).join(&m);
        assert!(!exists(&path), "{} appeared on the host", path.display());
    }
    assert!(!exists(&Path::new("/").join(format!("{m}.d"))));
    assert_eq!(std::fs::read("/etc/passwd").unwrap(), passwd_before);
    // /tmp and /dev/shm were the exec's own: the next exec starts empty.
    let done = run(&server, &id, &format!("cat /tmp/{m} /dev/shm/{m} 2>&1")).await;
    let output = done["output"].as_str().unwrap();
    assert!(
        output.contains(&format!("/tmp/{m}: No such file"))
            && output.contains(&format!("/dev/shm/{m}: No such file")),
        "{output}"
    );
    // Nor can it land in the bystander's workspace.
    assert_eq!(tree_names(&server.workspace(&other)), ["keep.txt"]);
    assert_unaffected(&server, &other).await;
}

fn tree_names(dir: &Path) -> Vec<String> {
    crate::tree(dir)
        .into_iter()
        .map(|(path, _, _)| path)
        .collect()
}
