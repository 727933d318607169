//! Symlink tricks: sandboxed code plants symlinks in its workspace (to `/`, `/tmp`, `/etc`,
//! `/etc/passwd`, `/etc/hostname`) for a later upload or download through the API to follow.
//! Contained by the server's workspace file access: every client path is resolved one
//! component at a time with `O_NOFOLLOW` (a symlink on the way is refused), and uploads are
//! renamed into place (a symlink at the target is replaced, never written through).

use std::path::{Path, PathBuf};

use crate::helpers::*;
use crate::{assert_error, assert_unaffected, bystander, sh, tree, unique};

/// Temp files of uploads directly in `dir` (where one written through a symlink would land).
fn upload_temps_in(dir: &Path) -> Vec<String> {
    std::fs::read_dir(dir)
        .unwrap()
        .flatten()
        .map(|e| e.file_name().to_string_lossy().into_owned())
        .filter(|name| name.starts_with(".petri-upload-"))
        .collect()
}

/// A symlink to `/` in the workspace must not let an upload write anywhere on the host.
#[tokio::test]
async fn upload_through_a_planted_symlink_is_refused() {
    let server = TestServer::start().await;
    let other = bystander(&server).await;
    let id = server.sandbox().await;
    sh(
        &server,
        &id,
        "ln -s / /sandbox/escape && ln -s /tmp /sandbox/tmpdir",
    )
    .await;
    let marker = unique("symlink-upload");
    let target = PathBuf::from("/tmp").join(&marker);
    let before = tree(&server.workspace(&id));

    for name in [format!("escape/tmp/{marker}"), format!("tmpdir/{marker}")] {
        let got = server.upload(&id, &name, b"pwned".to_vec()).await;
        assert_error(got, 400, "invalid_path");
    }
    assert!(
        !exists(&target),
        "{} was written through the symlink",
        target.display()
    );
    assert_eq!(upload_temps_in(Path::new("/tmp")), Vec::<String>::new());
    assert_eq!(tree(&server.workspace(&id)), before);
    assert_unaffected(&server, &other).await;
}

/// A symlinked directory must not let a download read host files such as /etc/passwd.
#[tokio::test]
async fn download_through_a_planted_symlink_is_refused() {
    let server = TestServer::start().await;
    let other = bystander(&server).await;
    let id = server.sandbox().await;
    sh(&server, &id, "ln -s /etc /sandbox/etcdir && ln -s /etc/passwd /sandbox/pw && echo ok > /sandbox/real && ln -s real /sandbox/inner").await;

    for path in ["etcdir/passwd", "pw", "inner", "etcdir"] {
        let response = server
            .get(&format!("/v1/sandboxes/{id}/files/{path}"))
            .await;
        let status = response.status().as_u16();
        let body = response.text().await.unwrap();
        assert!(
            !body.contains("root:x:0:0"),
            "{path} leaked /etc/passwd: {body}"
        );
        let body = serde_json::from_str(&body).unwrap_or_default();
        assert_error((status, body), 400, "invalid_path");
    }
    // The control: a plain file downloads.
    let response = server.get(&format!("/v1/sandboxes/{id}/files/real")).await;
    assert_eq!(response.status().as_u16(), 200);
    assert_eq!(response.bytes().await.unwrap().as_ref(), b"ok\n");
    assert_unaffected(&server, &other).await;
}

/// Uploading over a symlink replaces the link itself; the file it pointed to is untouched.
#[tokio::test]
async fn upload_replaces_a_symlink_instead_of_following_it() {
    let server = TestServer::start().await;
    let other = bystander(&server).await;
    let id = server.sandbox().await;
    let hostname_before = std::fs::read("/etc/hostname").ok();
    sh(&server, &id, "ln -s /etc/hostname /sandbox/link").await;
    let link = server.workspace(&id).join("link");
    assert!(
        std::fs::symlink_metadata(&link)
            .unwrap()
            .file_type()
            .is_symlink()
    );

    let (status, body) = server.upload(&id, "link", b"replaced".to_vec()).await;
    assert_eq!(status, 201, "{body}");
    let meta = std::fs::symlink_metadata(&link).unwrap();
    assert!(
        meta.is_file(),
        "link must now be a regular file, is {:?}",
        meta.file_type()
    );
    assert_eq!(std::fs::read(&link).unwrap(), b"replaced");
    assert_eq!(
        std::fs::read("/etc/hostname").ok(),
        hostname_before,
        "/etc/hostname changed"
    );
    assert_unaffected(&server, &other).await;
}
