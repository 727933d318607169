//! Hostile input: every test runs a real attack against the real server and checks both the
//! answer (status and stable `code`) and that nothing changed on the host or in the workspace.
//!
//! The threat model: clients send arbitrary names, archives and bodies; sandboxed code owns
//! its workspace and may plant symlinks and FIFOs there before the server touches it.

use std::io::Write;
use std::path::{Path, PathBuf};
use std::time::Duration;

use serde_json::{Value, json};

use crate::helpers::*;

// ---------------------------------------------------------------------------------------------
// Helpers
// ---------------------------------------------------------------------------------------------

/// Paths below `dir` (symlinks not followed) whose file name contains `needle`.
fn find_named(dir: &Path, needle: &str) -> Vec<String> {
    tree(dir)
        .into_iter()
        .map(|(path, _, _)| path)
        .filter(|path| {
            Path::new(path)
                .file_name()
                .is_some_and(|n| n.to_string_lossy().contains(needle))
        })
        .collect()
}

/// The directory holding the state root (the test's private temp dir): the first place an
/// escape from `sandboxes/<id>` would land.
fn host_dir(server: &TestServer) -> PathBuf {
    server.root.parent().unwrap().to_path_buf()
}

/// The test's temp dir minus what the server legitimately rewrites on its own (the SQLite
/// registry, run logs, and the spare disk pool it refills in the background after a create):
/// everything else must be left alone by a refused request.
fn host_snapshot(server: &TestServer) -> Vec<(String, &'static str, u64)> {
    tree(&host_dir(server))
        .into_iter()
        .filter(|(path, _, _)| {
            !path.starts_with("state/registry.db")
                && !path.starts_with("state/logs")
                && !path.starts_with("state/disks/spares/")
        })
        .collect()
}

fn staging(server: &TestServer) -> Vec<(String, &'static str, u64)> {
    tree(&server.root.join("staging"))
}

/// Asserts an error answer: status and stable `code`.
#[track_caller]
fn assert_error(got: (u16, Value), status: u16, code: &str) -> Value {
    let (got_status, body) = got;
    assert_eq!(got_status, status, "expected {status} {code}, got {body}");
    assert_eq!(body["code"], code, "expected {status} {code}, got {body}");
    body
}

/// Runs a shell command in the sandbox, requires success and returns its output.
async fn sh(server: &TestServer, id: &str, command: &str) -> String {
    let result = server.exec(id, command).await;
    assert_eq!(result.status, 200, "{command}: {}", result.raw);
    let done = result.done();
    assert_eq!(done["exit_code"], 0, "{command}: {}", result.raw);
    done["output"].as_str().unwrap_or_default().to_string()
}

/// POSTs raw bytes with a given content type.
async fn post_raw(
    server: &TestServer,
    path: &str,
    content_type: &str,
    body: impl Into<Vec<u8>>,
) -> (u16, Value) {
    let response = server
        .client
        .post(server.url(path))
        .header("content-type", content_type)
        .body(body.into())
        .send()
        .await
        .unwrap();
    let status = response.status().as_u16();
    (status, response.json().await.unwrap_or(Value::Null))
}

async fn delete_json(server: &TestServer, path: &str) -> (u16, Value) {
    let response = server.client.delete(server.url(path)).send().await.unwrap();
    let status = response.status().as_u16();
    (status, response.json().await.unwrap_or(Value::Null))
}

fn deflated() -> zip::write::SimpleFileOptions {
    zip::write::SimpleFileOptions::default().compression_method(zip::CompressionMethod::Deflated)
}

/// Rewrites the declared uncompressed size of every entry (local and central headers) of a
/// zip written by `zip_of`, as an attacker would to slip past a declared-size check.
fn forge_uncompressed_size(zip: &mut [u8], size: u32) {
    let mut patched = 0;
    for at in 0..zip.len().saturating_sub(4) {
        let offset = match &zip[at..at + 4] {
            b"PK\x03\x04" => 22,
            b"PK\x01\x02" => 24,
            _ => continue,
        };
        zip[at + offset..at + offset + 4].copy_from_slice(&size.to_le_bytes());
        patched += 1;
    }
    assert!(patched >= 2, "no zip headers found to forge");
}

// ---------------------------------------------------------------------------------------------
// 1. Upload names
// ---------------------------------------------------------------------------------------------

/// A client-chosen filename is a path: `..`, absolute paths and empty names must never
/// resolve outside (or to) the workspace.
#[tokio::test]
async fn upload_names_cannot_escape_the_workspace() {
    let server = TestServer::start().await;
    let id = server.sandbox().await;
    let workspace = server.workspace(&id);
    let marker = unique("name");
    let absolute = format!("/tmp/{marker}");
    let before = host_snapshot(&server);

    let names = [
        format!("../{marker}"),
        format!("../../{marker}"),
        format!("../../../{marker}"),
        absolute.clone(),
        format!("a/../../{marker}"),
        format!("a/../{marker}"),
        "..".to_string(),
        "a/..".to_string(),
        String::new(),
        ".".to_string(),
        "./".to_string(),
        "//".to_string(),
        "/".to_string(),
    ];
    for name in &names {
        let got = server.upload(&id, name, b"pwned".to_vec()).await;
        assert_error(got, 400, "invalid_path");
    }

    // Nothing anywhere under the test's temp dir, nor at the absolute target.
    assert!(
        !exists(Path::new(&absolute)),
        "{absolute} was written on the host"
    );
    assert!(find_named(&host_dir(&server), &marker).is_empty());
    assert_eq!(
        tree(&workspace),
        vec![],
        "rejected uploads left something in the workspace"
    );
    assert_eq!(host_snapshot(&server), before);

    // A nested name is legitimate: directories are created inside the workspace.
    let content = b"print('hello from app')\n".to_vec();
    let (status, body) = server.upload(&id, "src/app.py", content.clone()).await;
    assert_eq!(status, 201, "{body}");
    assert_eq!(body["filename"], "src/app.py");
    assert_eq!(body["size"], content.len());
    assert_eq!(
        std::fs::read(workspace.join("src/app.py")).unwrap(),
        content
    );
    assert_eq!(
        sh(&server, &id, "cat /sandbox/src/app.py").await.as_bytes(),
        &content[..]
    );
}

/// Uploading onto an existing directory must fail cleanly: no temp file left beside it and
/// the directory untouched.
#[tokio::test]
async fn upload_over_a_directory_leaves_no_temp_file() {
    let server = TestServer::start().await;
    let id = server.sandbox().await;
    let workspace = server.workspace(&id);
    sh(
        &server,
        &id,
        "mkdir -p /sandbox/src/keep && echo x > /sandbox/src/keep/f",
    )
    .await;
    let before = tree(&workspace);

    assert_error(
        server.upload(&id, "src/keep", b"data".to_vec()).await,
        400,
        "invalid_path",
    );
    assert_eq!(tree(&workspace), before);
    assert!(find_named(&workspace, ".petri-upload-").is_empty());
}

// ---------------------------------------------------------------------------------------------
// 2. Symlinks and special files planted by sandboxed code
// ---------------------------------------------------------------------------------------------

/// Traversal spelled with encoded slashes, NULs or absolute paths in the download URL.
#[tokio::test]
async fn download_paths_cannot_escape_the_workspace() {
    let server = TestServer::start().await;
    let id = server.sandbox().await;
    server.upload(&id, "inside.txt", b"in".to_vec()).await;
    for path in [
        "..%2F..%2Fregistry.db",
        "..%2F..%2F..%2Fstate%2Fregistry.db",
        "a%2F..%2F..%2Finside.txt",
        "%2Fetc%2Fpasswd",
        "inside.txt%00",
    ] {
        let got = server
            .get_json(&format!("/v1/sandboxes/{id}/files/{path}"))
            .await;
        assert_error(got, 400, "invalid_path");
    }
}

/// Opening a FIFO for reading blocks until a writer appears: a download must not hang a
/// server worker on one.
#[tokio::test]
async fn download_of_a_fifo_fails_fast() {
    let server = TestServer::start().await;
    let id = server.sandbox().await;
    sh(&server, &id, "mkfifo /sandbox/pipe").await;

    let got = tokio::time::timeout(
        Duration::from_secs(5),
        server.get_json(&format!("/v1/sandboxes/{id}/files/pipe")),
    )
    .await
    .expect("downloading a FIFO hung");
    assert_error(got, 400, "invalid_path");

    // The server is still responsive afterwards.
    let (status, _) = server.get_json(&format!("/v1/sandboxes/{id}")).await;
    assert_eq!(status, 200);
}

// ---------------------------------------------------------------------------------------------
// 3. Zip archives
// ---------------------------------------------------------------------------------------------

/// Entry names are paths too ("zip slip"): `..`, absolute and backslash names are refused
/// before anything is extracted.
#[tokio::test]
async fn zip_slip_entries_are_refused() {
    let server = TestServer::start().await;
    let id = server.sandbox().await;
    let workspace = server.workspace(&id);
    let marker = unique("zipslip");
    let absolute = format!("/tmp/{marker}");
    let before = host_snapshot(&server);

    for name in [
        format!("a/../../{marker}"),
        format!("../{marker}"),
        format!("../../../{marker}"),
        absolute.clone(),
        format!("..\\..\\{marker}"),
        "..".to_string(),
    ] {
        let archive = zip_of(&[(name.as_str(), b"pwned")]);
        let got = server.upload_zip(&id, archive).await;
        assert_error(got, 400, "invalid_path");
    }
    assert!(
        !exists(Path::new(&absolute)),
        "{absolute} was written on the host"
    );
    assert!(find_named(&host_dir(&server), &marker).is_empty());
    assert_eq!(tree(&workspace), vec![]);
    assert_eq!(host_snapshot(&server), before);
    assert_eq!(staging(&server), vec![]);
}

/// A symlink entry would let a later entry (or sandboxed code) write through it.
#[tokio::test]
async fn zip_symlink_entries_are_refused() {
    let server = TestServer::start().await;
    let id = server.sandbox().await;
    let mut buffer = std::io::Cursor::new(Vec::new());
    {
        let mut writer = zip::ZipWriter::new(&mut buffer);
        writer.add_symlink("root", "/", deflated()).unwrap();
        writer.start_file("root/tmp/evil", deflated()).unwrap();
        writer.write_all(b"pwned").unwrap();
        writer.finish().unwrap();
    }
    assert_error(
        server.upload_zip(&id, buffer.into_inner()).await,
        400,
        "invalid_path",
    );

    // A lone symlink entry, too.
    let mut buffer = std::io::Cursor::new(Vec::new());
    {
        let mut writer = zip::ZipWriter::new(&mut buffer);
        writer
            .add_symlink("passwd", "/etc/passwd", deflated())
            .unwrap();
        writer.finish().unwrap();
    }
    assert_error(
        server.upload_zip(&id, buffer.into_inner()).await,
        400,
        "invalid_path",
    );
    assert_eq!(tree(&server.workspace(&id)), vec![]);
    assert_eq!(staging(&server), vec![]);
}

/// Garbage and truncated archives are a client error, not a 500.
#[tokio::test]
async fn not_a_zip_is_invalid_zip() {
    let server = TestServer::start().await;
    let id = server.sandbox().await;
    let good = zip_of(&[("a.txt", b"aaaa")]);
    let truncated = good[..good.len() / 2].to_vec();
    for bytes in [b"this is not a zip archive".to_vec(), Vec::new(), truncated] {
        assert_error(server.upload_zip(&id, bytes).await, 400, "invalid_zip");
    }
    assert_eq!(tree(&server.workspace(&id)), vec![]);
    assert_eq!(staging(&server), vec![]);
}

/// The legitimate case: a package extracts and is importable by sandboxed code.
#[tokio::test]
async fn valid_zip_extracts_and_runs() {
    let server = TestServer::start().await;
    let id = server.sandbox().await;
    let archive = zip_of(&[
        ("pkg/__init__.py", b""),
        ("pkg/mod.py", b"VALUE = 'imported ok'\n"),
        ("main.py", b"from pkg.mod import VALUE\nprint(VALUE)\n"),
    ]);
    let (status, body) = server.upload_zip(&id, archive).await;
    assert_eq!(
        (status, body),
        (201, json!({ "status": "uploaded", "files": 3 }))
    );
    let workspace = server.workspace(&id);
    assert_eq!(
        std::fs::read(workspace.join("pkg/mod.py")).unwrap(),
        b"VALUE = 'imported ok'\n"
    );
    assert_eq!(
        sh(&server, &id, "python3 /sandbox/main.py").await,
        "imported ok\n"
    );
    assert_eq!(staging(&server), vec![]);
}

/// Extraction is all or nothing: a good entry before a bad one must not be left behind.
#[tokio::test]
async fn zip_with_one_bad_entry_changes_nothing() {
    let server = TestServer::start().await;
    let id = server.sandbox().await;
    let workspace = server.workspace(&id);
    let marker = unique("partial");
    server.upload(&id, "existing.txt", b"old".to_vec()).await;
    // Sandboxed code plants a symlink and a directory the archive will collide with.
    sh(&server, &id, "ln -s / /sandbox/lnk && mkdir /sandbox/adir").await;
    let before = tree(&workspace);

    let bad_name = format!("../{marker}");
    let through_link = format!("lnk/tmp/{marker}");
    let archives: Vec<(Vec<u8>, u16, &str)> = vec![
        // Caught while validating names.
        (
            zip_of(&[
                ("good.txt", b"good"),
                ("existing.txt", b"new"),
                (&bad_name, b"bad"),
            ]),
            400,
            "invalid_path",
        ),
        // The archive contradicts itself: `f` is a file and a directory.
        (
            zip_of(&[("good.txt", b"good"), ("f", b"file"), ("f/x", b"child")]),
            400,
            "invalid_zip",
        ),
        // Only found when merging into the workspace: a symlink where a directory goes...
        (
            zip_of(&[
                ("good.txt", b"good"),
                ("existing.txt", b"new"),
                (&through_link, b"bad"),
            ]),
            400,
            "invalid_path",
        ),
        // ...and a file where the workspace has a directory.
        (
            zip_of(&[
                ("good.txt", b"good"),
                ("existing.txt", b"new"),
                ("adir", b"bad"),
            ]),
            400,
            "invalid_path",
        ),
    ];
    for (index, (archive, status, code)) in archives.into_iter().enumerate() {
        let (got_status, body) = server.upload_zip(&id, archive).await;
        assert_eq!(
            (got_status, body["code"].as_str()),
            (status, Some(code)),
            "archive {index}: {body}"
        );
        assert!(
            !exists(&workspace.join("good.txt")),
            "archive {index} left good.txt"
        );
        assert_eq!(
            std::fs::read(workspace.join("existing.txt")).unwrap(),
            b"old"
        );
        assert_eq!(
            tree(&workspace),
            before,
            "archive {index} changed the workspace"
        );
    }
    assert!(!exists(&PathBuf::from("/tmp").join(&marker)));
    assert!(find_named(&host_dir(&server), &marker).is_empty());
    assert_eq!(staging(&server), vec![]);
}

// ---------------------------------------------------------------------------------------------
// 4. Zip bombs
// ---------------------------------------------------------------------------------------------

/// Millions of tiny entries exhaust inodes and time: the entry count is capped.
#[tokio::test]
async fn zip_entry_count_is_capped() {
    let server = TestServer::start_with(&[("PETRI_ZIP_MAX_ENTRIES", "50")]).await;
    let id = server.sandbox().await;
    let names: Vec<String> = (0..51).map(|i| format!("f{i:02}.txt")).collect();
    let entries: Vec<(&str, &[u8])> = names.iter().map(|n| (n.as_str(), &b"x"[..])).collect();

    assert_error(
        server.upload_zip(&id, zip_of(&entries)).await,
        413,
        "too_large",
    );
    assert_eq!(tree(&server.workspace(&id)), vec![]);
    assert_eq!(staging(&server), vec![]);

    // Exactly at the cap is fine.
    let (status, body) = server.upload_zip(&id, zip_of(&entries[..50])).await;
    assert_eq!(
        (status, body),
        (201, json!({ "status": "uploaded", "files": 50 }))
    );
}

/// 20 MiB of zeros compresses to ~20 KiB: the uncompressed size is capped.
#[tokio::test]
async fn zip_bomb_is_capped() {
    let server = TestServer::start_with(&[("PETRI_ZIP_MAX_MB", "5")]).await;
    let id = server.sandbox().await;
    let zeros = vec![0u8; 20 << 20];
    let archive = zip_of(&[("bomb.bin", &zeros)]);
    assert!(
        archive.len() < 200 << 10,
        "the bomb should compress well: {} bytes",
        archive.len()
    );

    assert_error(server.upload_zip(&id, archive).await, 413, "too_large");
    assert_eq!(tree(&server.workspace(&id)), vec![]);
    assert_eq!(staging(&server), vec![]);
}

/// The declared size is attacker-controlled: a bomb that lies about it must still be caught
/// by counting what really decompresses.
#[tokio::test]
async fn zip_bomb_with_forged_sizes_is_capped() {
    let server = TestServer::start_with(&[("PETRI_ZIP_MAX_MB", "5")]).await;
    let id = server.sandbox().await;
    let zeros = vec![0u8; 20 << 20];
    let mut archive = zip_of(&[("bomb.bin", &zeros)]);
    forge_uncompressed_size(&mut archive, 1024);

    // The reader trusts the central directory, so only the real byte count can catch this.
    let body = assert_error(server.upload_zip(&id, archive).await, 413, "too_large");
    assert!(
        body["detail"]
            .as_str()
            .unwrap()
            .contains("PETRI_ZIP_MAX_MB"),
        "{body}"
    );
    assert_eq!(tree(&server.workspace(&id)), vec![]);
    assert_eq!(staging(&server), vec![]);
}

// ---------------------------------------------------------------------------------------------
// 5. Upload size
// ---------------------------------------------------------------------------------------------

/// An oversized upload must not fill the disk, nor leave a partial or temp file behind.
#[tokio::test]
async fn oversized_file_upload_leaves_nothing() {
    let server = TestServer::start_with(&[("PETRI_MAX_UPLOAD_MB", "1")]).await;
    let id = server.sandbox().await;
    let workspace = server.workspace(&id);
    let big = vec![b'a'; 2 << 20];

    assert_error(server.upload(&id, "big.bin", big).await, 413, "too_large");
    assert_eq!(
        tree(&workspace),
        vec![],
        "partial or temp upload left behind"
    );

    // Just under the limit still works.
    let (status, body) = server.upload(&id, "ok.bin", vec![b'a'; 1 << 19]).await;
    assert_eq!(status, 201, "{body}");
}

/// An oversized upload to a nested name must not leave its freshly created parent
/// directories behind either ("over max_bytes nothing is left behind").
#[tokio::test]
async fn oversized_nested_upload_leaves_no_directories() {
    let server = TestServer::start_with(&[("PETRI_MAX_UPLOAD_MB", "1")]).await;
    let id = server.sandbox().await;
    let big = vec![b'a'; 2 << 20];

    assert_error(
        server.upload(&id, "deep/er/big.bin", big).await,
        413,
        "too_large",
    );
    assert_eq!(
        tree(&server.workspace(&id)),
        vec![],
        "upload left directories behind"
    );
}

/// The zip route streams to staging first: an oversized archive leaves nothing there either.
#[tokio::test]
async fn oversized_zip_upload_leaves_nothing() {
    let server = TestServer::start_with(&[("PETRI_MAX_UPLOAD_MB", "1")]).await;
    let id = server.sandbox().await;
    // Random-ish bytes so the archive itself is over the limit.
    let mut noise = Vec::with_capacity(2 << 20);
    let mut state: u64 = 0x9e37_79b9_7f4a_7c15;
    while noise.len() < 2 << 20 {
        state ^= state << 13;
        state ^= state >> 7;
        state ^= state << 17;
        noise.extend_from_slice(&state.to_le_bytes());
    }
    let archive = zip_of(&[("noise.bin", &noise)]);
    assert!(archive.len() > 1 << 20);

    assert_error(server.upload_zip(&id, archive).await, 413, "too_large");
    assert_eq!(tree(&server.workspace(&id)), vec![]);
    assert_eq!(staging(&server), vec![]);
}

// ---------------------------------------------------------------------------------------------
// 6. Malformed requests and unknown ids
// ---------------------------------------------------------------------------------------------

/// Bad JSON must be a clean 4xx with our error shape, and must create or run nothing.
#[tokio::test]
async fn malformed_json_bodies_are_refused() {
    let server = TestServer::start().await;
    let id = server.sandbox().await;
    let sandboxes_before = tree(&server.root.join("sandboxes"));
    let exec = format!("/v1/sandboxes/{id}/exec");

    for body in ["{not json", "{\"language\": ", "\u{0}\u{1}"] {
        assert_error(
            post_raw(&server, "/v1/sandboxes", "application/json", body).await,
            400,
            "invalid_json",
        );
        assert_error(
            post_raw(&server, &exec, "application/json", body).await,
            400,
            "invalid_json",
        );
    }
    // A JSON value that is not an object.
    for body in ["[]", "[{\"command\": \"id\"}]", "\"id\"", "42"] {
        assert_error(
            post_raw(&server, "/v1/sandboxes", "application/json", body).await,
            422,
            "validation_error",
        );
        assert_error(
            post_raw(&server, &exec, "application/json", body).await,
            422,
            "validation_error",
        );
    }
    // An object without `command`, or with the wrong type.
    let body = assert_error(
        server.post_json(&exec, json!({ "cmd": "id" })).await,
        422,
        "validation_error",
    );
    assert_eq!(
        body["detail"][0]["loc"],
        json!(["body", "command"]),
        "{body}"
    );
    assert_error(
        server.post_json(&exec, json!({ "command": 5 })).await,
        422,
        "validation_error",
    );

    let (_, list) = server.get_json("/v1/sandboxes").await;
    assert_eq!(
        list.as_array().unwrap().len(),
        1,
        "a malformed create made a sandbox: {list}"
    );
    assert_eq!(tree(&server.root.join("sandboxes")), sandboxes_before);
    assert!(
        server.runs(&id).await.is_empty(),
        "a malformed exec ran something"
    );
}

/// Sandbox ids become directory names: unknown or traversal-shaped ids must be 404 on every
/// route, and must never reach the filesystem.
#[tokio::test]
async fn unknown_and_traversal_ids_are_not_found() {
    let server = TestServer::start().await;
    let live = server.sandbox().await;
    server.upload(&live, "keep.txt", b"keep".to_vec()).await;
    // Make the traversal real if the id were ever joined unvalidated: `sandboxes/sb_..`
    // exists, so `sandboxes/sb_../../../decoy` resolves to `<root>/decoy`.
    std::fs::create_dir(server.root.join("sandboxes/sb_..")).unwrap();
    std::fs::create_dir(server.root.join("decoy")).unwrap();
    std::fs::write(server.root.join("decoy/precious"), b"precious").unwrap();
    let host_before = host_snapshot(&server);

    let ids = [
        format!("sb_{}", "0123456789abcdef".repeat(2)),
        "sb_..%2F..%2Fetc".to_string(),
        "sb_..%2F..%2F..%2Fdecoy".to_string(),
        format!("..%2F{live}"),
        live.to_uppercase(),
    ];
    for id in &ids {
        let not_found = |got: (u16, Value)| assert_error(got, 404, "sandbox_not_found");
        not_found(server.get_json(&format!("/v1/sandboxes/{id}")).await);
        not_found(server.get_json(&format!("/v1/sandboxes/{id}/files")).await);
        not_found(
            server
                .get_json(&format!("/v1/sandboxes/{id}/files/precious"))
                .await,
        );
        not_found(server.get_json(&format!("/v1/sandboxes/{id}/runs")).await);
        not_found(server.upload(id, "x.txt", b"x".to_vec()).await);
        not_found(server.upload_zip(id, zip_of(&[("x.txt", b"x")])).await);
        not_found(
            server
                .post_json(
                    &format!("/v1/sandboxes/{id}/exec"),
                    json!({ "command": "true" }),
                )
                .await,
        );
        not_found(delete_json(&server, &format!("/v1/sandboxes/{id}")).await);
    }
    assert_eq!(
        host_snapshot(&server),
        host_before,
        "an unknown id touched the state dir"
    );
    assert_eq!(
        std::fs::read(server.root.join("decoy/precious")).unwrap(),
        b"precious"
    );
    let (status, _) = server.get_json(&format!("/v1/sandboxes/{live}")).await;
    assert_eq!(status, 200, "the live sandbox must be unaffected");
}

/// Multipart bodies without a `file` part, or not multipart at all, write nothing.
#[tokio::test]
async fn malformed_multipart_is_refused() {
    let server = TestServer::start().await;
    let id = server.sandbox().await;
    let files = format!("/v1/sandboxes/{id}/files");
    let upload = format!("/v1/sandboxes/{id}/upload");

    for path in [&files, &upload] {
        let part = reqwest::multipart::Part::bytes(b"data".to_vec()).file_name("x.txt");
        let form = reqwest::multipart::Form::new().part("document", part);
        let response = server
            .client
            .post(server.url(path))
            .multipart(form)
            .send()
            .await
            .unwrap();
        let got = (
            response.status().as_u16(),
            response.json().await.unwrap_or(Value::Null),
        );
        let body = assert_error(got, 422, "validation_error");
        assert_eq!(body["detail"][0]["loc"], json!(["body", "file"]), "{body}");

        let got = post_raw(&server, path, "application/json", "{\"file\": \"x\"}").await;
        assert_error(got, 422, "validation_error");
        let got = post_raw(&server, path, "text/plain", "just text").await;
        assert_error(got, 422, "validation_error");
    }
    assert_eq!(tree(&server.workspace(&id)), vec![]);
    assert_eq!(staging(&server), vec![]);
}

// ---------------------------------------------------------------------------------------------
// 7. Listing
// ---------------------------------------------------------------------------------------------

/// A listing walks the tree without following symlinks: a link to `/` must not turn it into a
/// listing of the host.
#[tokio::test]
async fn listing_does_not_follow_symlinks() {
    let server = TestServer::start().await;
    let id = server.sandbox().await;
    for (name, content) in [
        ("README.md", &b"# hi\n"[..]),
        ("src/app.py", b"print(1)\n"),
        ("src/lib/util.py", b"X = 1\n"),
    ] {
        let (status, body) = server.upload(&id, name, content.to_vec()).await;
        assert_eq!(status, 201, "{body}");
    }
    sh(
        &server,
        &id,
        "ln -s / /sandbox/root && ln -s /etc /sandbox/src/etc && ln -s /etc/passwd /sandbox/pw",
    )
    .await;

    let (status, listing) = server.get_json(&format!("/v1/sandboxes/{id}/files")).await;
    assert_eq!(status, 200, "{listing}");
    let entries = listing.as_array().unwrap();
    let find = |path: &str| {
        entries
            .iter()
            .find(|e| e["path"] == path)
            .unwrap_or_else(|| panic!("{path} missing from {listing}"))
    };
    assert_eq!(
        (
            find("README.md")["type"].as_str(),
            find("README.md")["size"].as_u64()
        ),
        (Some("file"), Some(5))
    );
    assert_eq!(find("src")["type"], "dir");
    assert_eq!(
        (
            find("src/app.py")["type"].as_str(),
            find("src/app.py")["size"].as_u64()
        ),
        (Some("file"), Some(9))
    );
    assert_eq!(find("src/lib")["type"], "dir");
    assert_eq!(
        (
            find("src/lib/util.py")["type"].as_str(),
            find("src/lib/util.py")["size"].as_u64()
        ),
        (Some("file"), Some(6))
    );
    for link in ["root", "src/etc", "pw"] {
        assert_eq!(find(link)["type"], "symlink", "{listing}");
    }
    for entry in entries {
        let path = entry["path"].as_str().unwrap();
        assert!(
            entry["size"].is_u64() && entry["type"].is_string(),
            "{entry}"
        );
        assert!(
            !path.starts_with("root/") && !path.starts_with("src/etc/"),
            "followed a symlink: {path}"
        );
        assert!(
            !path.contains("passwd") && !path.contains("hostname"),
            "host path listed: {path}"
        );
    }
    assert_eq!(entries.len(), 8, "{listing}");

    // Listing a subdirectory through the download route behaves the same.
    let (status, sub) = server
        .get_json(&format!("/v1/sandboxes/{id}/files/src"))
        .await;
    assert_eq!(status, 200, "{sub}");
    let paths: Vec<&str> = sub
        .as_array()
        .unwrap()
        .iter()
        .map(|e| e["path"].as_str().unwrap())
        .collect();
    assert_eq!(
        paths,
        ["src/app.py", "src/etc", "src/lib", "src/lib/util.py"]
    );
    // And listing a symlinked directory is refused rather than followed.
    assert_error(
        server
            .get_json(&format!("/v1/sandboxes/{id}/files/root"))
            .await,
        400,
        "invalid_path",
    );
}

// ---------------------------------------------------------------------------------------------
// 8. Deep trees
// ---------------------------------------------------------------------------------------------

/// Removes a deep tree with `rm -rf` (which walks iteratively) before the server's temp dir is
/// cleaned up: `std::fs::remove_dir_all` recurses and would overflow this test's own stack.
struct RemoveDeepTree(PathBuf);

impl Drop for RemoveDeepTree {
    fn drop(&mut self) {
        let _ = std::process::Command::new("rm")
            .arg("-rf")
            .arg(&self.0)
            .status();
    }
}

/// Sandboxed code nests `depth` directories named `d` in its workspace.
async fn nest_directories(server: &TestServer, id: &str, depth: usize) {
    let script = format!(
        "import os\nos.chdir('/sandbox')\nfor _ in range({depth}):\n    os.mkdir('d')\n    os.chdir('d')\n"
    );
    let (status, body) = server.upload(id, "nest.py", script.into_bytes()).await;
    assert_eq!(status, 201, "{body}");
    sh(
        server,
        id,
        "python3 /sandbox/nest.py && rm /sandbox/nest.py",
    )
    .await;
}

/// Sends a request and reports a dead server (connection reset or refused) as a failure.
async fn send_or_fail(request: reqwest::RequestBuilder, what: &str) -> reqwest::Response {
    match tokio::time::timeout(Duration::from_secs(120), request.send()).await {
        Ok(Ok(response)) => response,
        Ok(Err(e)) => panic!("{what}: the server did not answer (did it crash?): {e}"),
        Err(_) => panic!("{what}: no answer within 120 s"),
    }
}

async fn assert_alive(server: &TestServer, after: &str) {
    let response = send_or_fail(
        server.client.get(server.url("/health")),
        &format!("/health after {after}"),
    )
    .await;
    assert_eq!(response.status().as_u16(), 200);
}

/// Sandboxed code controls the workspace's depth: listing it must neither crash the server
/// (a stack overflow aborts the whole process, killing every sandbox's runs) nor hang.
#[tokio::test]
async fn deep_workspace_listing_does_not_crash_the_server() {
    let server = TestServer::start().await;
    let id = server.sandbox().await;
    let _cleanup = RemoveDeepTree(server.workspace(&id));
    nest_directories(&server, &id, 5_000).await;

    for path in [
        format!("/v1/sandboxes/{id}/files"),
        format!("/v1/sandboxes/{id}/files/d"),
    ] {
        let response =
            send_or_fail(server.client.get(server.url(&path)), &format!("GET {path}")).await;
        let status = response.status().as_u16();
        assert!(
            status == 200 || (400..500).contains(&status),
            "GET {path}: {status}"
        );
        assert_alive(&server, &format!("GET {path}")).await;
    }
}

/// Deleting (or expiring) a sandbox frees its workspace: a deep tree must not crash the
/// server on the way.
#[tokio::test]
async fn deleting_a_deep_workspace_does_not_crash_the_server() {
    let server = TestServer::start().await;
    let id = server.sandbox().await;
    let _cleanup = RemoveDeepTree(server.workspace(&id));
    nest_directories(&server, &id, 25_000).await;

    let path = format!("/v1/sandboxes/{id}");
    let response = send_or_fail(server.client.delete(server.url(&path)), "DELETE").await;
    assert_eq!(response.status().as_u16(), 204);
    assert_alive(&server, "DELETE").await;
    assert!(
        !exists(&server.workspace(&id)),
        "the workspace was not freed"
    );
}

/// A client without exec can only nest as deep as a 4096-byte entry name allows (~2000
/// levels). Client paths are capped at 64 levels: a 4 KiB archive nested 2000 deep is refused
/// cleanly (and changes nothing), one at the cap extracts and downloads.
#[tokio::test]
async fn deep_zip_entry_does_not_crash_the_server() {
    let server = TestServer::start().await;
    let id = server.sandbox().await;
    let _cleanup = RemoveDeepTree(server.workspace(&id));
    let upload = |name: String| {
        let part = reqwest::multipart::Part::bytes(zip_of(&[(name.as_str(), b"deep")]))
            .file_name("deep.zip");
        server
            .client
            .post(server.url(&format!("/v1/sandboxes/{id}/upload")))
            .multipart(reqwest::multipart::Form::new().part("file", part))
    };
    let response = send_or_fail(upload(format!("{}f", "d/".repeat(2_040))), "zip upload").await;
    assert_eq!(response.status().as_u16(), 400);
    let body: serde_json::Value = response.json().await.unwrap();
    assert_eq!(body["code"], "invalid_path");
    assert_alive(&server, "zip upload").await;
    assert_eq!(std::fs::read_dir(server.workspace(&id)).unwrap().count(), 0);

    let name = format!("{}f", "d/".repeat(63));
    let response = send_or_fail(upload(name.clone()), "zip upload at the cap").await;
    assert_eq!(response.status().as_u16(), 201);
    let response = send_or_fail(
        server
            .client
            .get(server.url(&format!("/v1/sandboxes/{id}/files/{name}"))),
        "download",
    )
    .await;
    assert_eq!(response.status().as_u16(), 200);
    assert_eq!(response.bytes().await.unwrap().as_ref(), b"deep");
    assert_eq!(staging(&server), vec![]);
}

#[tokio::test]
async fn deleting_files_never_follows_a_planted_symlink() {
    let server = TestServer::start().await;
    let id = server.sandbox().await;
    let outside = tempfile::tempdir().unwrap();
    std::fs::write(outside.path().join("precious"), "keep").unwrap();
    let target = outside.path().display();
    sh(
        &server,
        &id,
        &format!("mkdir -p tree/deep && touch tree/deep/f keep.txt && ln -s {target} linkdir && ln -s {target}/precious link"),
    )
    .await;
    let delete =
        async |path: &str| delete_json(&server, &format!("/v1/sandboxes/{id}/files/{path}")).await;
    // Through a symlinked directory: refused, the host file stays.
    let (status, body) = delete("linkdir/precious").await;
    assert!((400..500).contains(&status), "{status} {body}");
    // A symlink itself is removed as a link; its target stays.
    assert_eq!(delete("link").await.0, 204);
    assert!(outside.path().join("precious").exists());
    // A directory goes with everything below it; a missing path is a 404.
    assert_eq!(delete("tree").await.0, 204);
    assert_eq!(delete("tree").await.0, 404);
    for bad in ["..%2Fescape", "a/%2E%2E/%2E%2E/x"] {
        let (status, body) = delete(bad).await;
        assert!((400..500).contains(&status), "{bad}: {status} {body}");
    }
    assert_eq!(sh(&server, &id, "ls").await, "keep.txt\nlinkdir\n");
    assert_eq!(
        std::fs::read_to_string(outside.path().join("precious")).unwrap(),
        "keep"
    );
}
