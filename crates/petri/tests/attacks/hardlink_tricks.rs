//! Hardlink tricks: linking host files (`/etc/passwd`, `/etc/hosts`, a setuid `su`, an open
//! descriptor through `/proc/self/fd` and `linkat(AT_EMPTY_PATH)`) into the workspace so that a
//! later download reads them, and hardlinking inside the workspace so that a later upload
//! writes through to the other name. Contained by mounts (every host file sits on another
//! mount than `/sandbox`: EXDEV) and by uploads being renamed into place.

use std::os::unix::fs::MetadataExt;

use crate::helpers::*;
use crate::{assert_unaffected, bystander, python, sh};

const LINK_HOST_FILES: &str = r#"
import ctypes, os
for target, name in [("/etc/passwd", "pw"), ("/etc/hosts", "hosts"), ("/usr/bin/su", "su")]:
    try:
        os.link(target, f"/sandbox/{name}")
        print("linked", name)
    except OSError as e:
        print(name, e.strerror)
fd = os.open("/etc/passwd", os.O_RDONLY)
try:
    os.link(f"/proc/self/fd/{fd}", "/sandbox/viafd", follow_symlinks=True)
    print("linked viafd")
except OSError as e:
    print("viafd", e.strerror)
libc = ctypes.CDLL(None, use_errno=True)
AT_FDCWD, AT_EMPTY_PATH = -100, 0x1000
if libc.linkat(fd, b"", AT_FDCWD, b"/sandbox/viaempty", AT_EMPTY_PATH) == 0:
    print("linked viaempty")
else:
    print("viaempty", os.strerror(ctypes.get_errno()))
"#;

#[tokio::test]
async fn host_files_cannot_be_hardlinked_into_the_workspace() {
    let server = TestServer::start().await;
    let other = bystander(&server).await;
    let id = server.sandbox().await;
    let links_before = std::fs::metadata("/etc/passwd").unwrap().nlink();

    let output = python(&server, &id, LINK_HOST_FILES).await;
    for name in ["pw", "hosts", "su", "viafd", "viaempty"] {
        assert!(
            output.contains(&format!("{name} Invalid cross-device link")),
            "{name}: {output}"
        );
        let response = server
            .get(&format!("/v1/sandboxes/{id}/files/{name}"))
            .await;
        assert_eq!(response.status().as_u16(), 404, "{name}");
        let body = response.text().await.unwrap();
        assert!(!body.contains("root:"), "{name} leaked a host file: {body}");
    }
    assert!(!output.contains("linked"), "{output}");
    assert_eq!(
        std::fs::metadata("/etc/passwd").unwrap().nlink(),
        links_before,
        "a new link to the host's /etc/passwd exists"
    );
    assert_eq!(
        crate::tree(&server.workspace(&id)).len(),
        1,
        "only attack.py"
    );
    assert_unaffected(&server, &other).await;
}

/// Two names for one inode: an upload to one must not change the other.
#[tokio::test]
async fn upload_over_a_hardlink_does_not_write_through() {
    let server = TestServer::start().await;
    let other = bystander(&server).await;
    let id = server.sandbox().await;
    sh(
        &server,
        &id,
        "echo original > /sandbox/a && ln /sandbox/a /sandbox/b",
    )
    .await;
    let (status, body) = server.upload(&id, "b", b"uploaded".to_vec()).await;
    assert_eq!(status, 201, "{body}");

    let workspace = server.workspace(&id);
    assert_eq!(std::fs::read(workspace.join("a")).unwrap(), b"original\n");
    assert_eq!(std::fs::read(workspace.join("b")).unwrap(), b"uploaded");
    assert_eq!(std::fs::metadata(workspace.join("a")).unwrap().nlink(), 1);
    let response = server.get(&format!("/v1/sandboxes/{id}/files/a")).await;
    assert_eq!(response.text().await.unwrap(), "original\n");
    assert_unaffected(&server, &other).await;
}
