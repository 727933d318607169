use std::io::Write;

use super::*;

struct Chunks(Vec<Bytes>);

impl ChunkSource for Chunks {
    async fn next_chunk(&mut self) -> Result<Option<Bytes>, EngineError> {
        Ok((!self.0.is_empty()).then(|| self.0.remove(0)))
    }
}

fn setup() -> (tempfile::TempDir, Workspaces) {
    let dir = tempfile::tempdir().unwrap();
    std::fs::create_dir(dir.path().join("ws")).unwrap();
    std::fs::create_dir(dir.path().join("staging")).unwrap();
    let disks = petri_sandbox::DiskQuotas::unavailable(dir.path().join("disks"), "unit tests");
    let workspaces = Workspaces::new(dir.path().join("ws"), dir.path().join("staging"), disks);
    workspaces.create("sb").unwrap();
    (dir, workspaces)
}

fn zip_of(entries: &[(&str, &[u8])]) -> Vec<u8> {
    let mut buffer = std::io::Cursor::new(Vec::new());
    let mut writer = ::zip::ZipWriter::new(&mut buffer);
    for (name, content) in entries {
        writer
            .start_file(*name, ::zip::write::SimpleFileOptions::default())
            .unwrap();
        writer.write_all(content).unwrap();
    }
    writer.finish().unwrap();
    buffer.into_inner()
}

const LIMITS: ZipLimits = ZipLimits {
    max_entries: 10,
    max_bytes: 1000,
};

#[tokio::test]
async fn nested_upload_creates_directories_atomically() {
    let (_dir, ws) = setup();
    let path = RelPath::parse("src/pkg/app.py").unwrap();
    let n = ws
        .write_file(
            "sb",
            &path,
            Chunks(vec![Bytes::from("print(1)\n")]),
            100,
            Owner::default(),
        )
        .await
        .unwrap();
    assert_eq!(n, 9);
    assert_eq!(
        std::fs::read_to_string(ws.path("sb").join("src/pkg/app.py")).unwrap(),
        "print(1)\n"
    );
}

#[tokio::test]
async fn upload_through_planted_symlink_is_refused() {
    let (dir, ws) = setup();
    let outside = dir.path().join("outside");
    std::fs::create_dir(&outside).unwrap();
    std::os::unix::fs::symlink(&outside, ws.path("sb").join("link")).unwrap();
    let path = RelPath::parse("link/pwned").unwrap();
    let err = ws
        .write_file(
            "sb",
            &path,
            Chunks(vec![Bytes::from("x")]),
            100,
            Owner::default(),
        )
        .await
        .unwrap_err();
    assert!(matches!(err, EngineError::InvalidPath { .. }), "{err}");
    assert!(!outside.join("pwned").exists());
}

#[tokio::test]
async fn oversized_upload_leaves_nothing() {
    let (_dir, ws) = setup();
    let path = RelPath::parse("big.bin").unwrap();
    let chunks = Chunks(vec![Bytes::from(vec![0u8; 60]), Bytes::from(vec![0u8; 60])]);
    let err = ws
        .write_file("sb", &path, chunks, 100, Owner::default())
        .await
        .unwrap_err();
    assert!(matches!(err, EngineError::TooLarge { .. }), "{err}");
    assert_eq!(std::fs::read_dir(ws.path("sb")).unwrap().count(), 0);
}

#[tokio::test]
async fn zip_slip_and_bombs_change_nothing() {
    let (_dir, ws) = setup();
    for archive in [
        zip_of(&[("ok.txt", b"fine"), ("a/../../evil.txt", b"evil")]),
        zip_of(&[("ok.txt", b"fine"), ("big.txt", &[b'0'; 2000])]),
        zip_of(&[("a", b"file"), ("a/b", b"under a file")]),
        b"not a zip at all".to_vec(),
    ] {
        let result = ws
            .import_zip(
                "sb",
                Chunks(vec![Bytes::from(archive)]),
                1 << 20,
                LIMITS,
                Owner::default(),
            )
            .await;
        assert!(result.is_err());
        assert_eq!(std::fs::read_dir(ws.path("sb")).unwrap().count(), 0);
    }
    let many: Vec<(String, &[u8])> = (0..11).map(|i| (format!("f{i}"), &b"x"[..])).collect();
    let refs: Vec<(&str, &[u8])> = many.iter().map(|(n, c)| (n.as_str(), *c)).collect();
    let result = ws
        .import_zip(
            "sb",
            Chunks(vec![Bytes::from(zip_of(&refs))]),
            1 << 20,
            LIMITS,
            Owner::default(),
        )
        .await;
    assert!(matches!(result, Err(EngineError::TooLarge { .. })));
    assert_eq!(
        std::fs::read_dir(
            ws.path("sb")
                .parent()
                .unwrap()
                .parent()
                .unwrap()
                .join("staging")
        )
        .unwrap()
        .count(),
        0
    );
}

#[tokio::test]
async fn zip_merges_into_existing_tree() {
    let (_dir, ws) = setup();
    std::fs::create_dir(ws.path("sb").join("src")).unwrap();
    std::fs::write(ws.path("sb").join("src/keep.py"), "keep").unwrap();
    let archive = zip_of(&[("src/new.py", b"new"), ("README", b"r")]);
    let files = ws
        .import_zip(
            "sb",
            Chunks(vec![Bytes::from(archive)]),
            1 << 20,
            LIMITS,
            Owner::default(),
        )
        .await
        .unwrap();
    assert_eq!(files, 2);
    assert_eq!(
        std::fs::read_to_string(ws.path("sb").join("src/keep.py")).unwrap(),
        "keep"
    );
    assert_eq!(
        std::fs::read_to_string(ws.path("sb").join("src/new.py")).unwrap(),
        "new"
    );
    let listing = ws.list("sb", None).unwrap();
    let paths: Vec<_> = listing.iter().map(|e| e.path.as_str()).collect();
    assert_eq!(paths, ["README", "src", "src/keep.py", "src/new.py"]);
}

/// As root, what the server writes into a workspace belongs to the sandbox's own uid.
#[tokio::test]
async fn uploads_and_zip_entries_belong_to_the_sandbox_uid() {
    use std::os::unix::fs::MetadataExt;
    if !rustix::process::geteuid().is_root() {
        eprintln!("skipped: chown needs root (CI runs as root)");
        return;
    }
    let (_dir, ws) = setup();
    let owner = Owner::new(Some(1_234_567));
    let path = RelPath::parse("a/b/up.txt").unwrap();
    ws.write_file("sb", &path, Chunks(vec![Bytes::from("x")]), 100, owner)
        .await
        .unwrap();
    let archive = zip_of(&[("z/dir/in.txt", b"y")]);
    ws.import_zip(
        "sb",
        Chunks(vec![Bytes::from(archive)]),
        1 << 20,
        LIMITS,
        owner,
    )
    .await
    .unwrap();
    for made in ["a", "a/b", "a/b/up.txt", "z", "z/dir", "z/dir/in.txt"] {
        let uid = std::fs::metadata(ws.path("sb").join(made)).unwrap().uid();
        assert_eq!(uid, 1_234_567, "{made}");
    }
}
