//! Disk quotas: each workspace is a filesystem of the sandbox's `disk_mb` (the fill attack
//! itself is `attacks::disk_fill`), `/tmp` is bounded too, and disks outlive a crash.

use serde_json::json;

use crate::helpers::*;

const FILL: &str = "dd if=/dev/zero of=fill bs=1M count=400 2>&1; stat -c %s fill";

#[tokio::test]
async fn tmp_is_bounded_too() {
    let server = TestServer::start_with(&[("PETRI_TMP_MB", "32")]).await;
    let id = server.sandbox().await;
    let result = server
        .exec(
            &id,
            "dd if=/dev/zero of=/tmp/fill bs=1M count=100 2>&1; stat -c %s /tmp/fill",
        )
        .await;
    let output = result.done()["output"].as_str().unwrap().to_string();
    assert!(output.contains("No space left on device"), "{output}");
    let size: u64 = output.lines().last().unwrap().trim().parse().unwrap();
    assert!(size <= 32 << 20, "/tmp took {size} bytes: {output}");
    assert_eq!(server.get("/health").await.status(), 200);
}

#[tokio::test]
async fn disk_requests_are_validated() {
    let server = TestServer::start().await;
    for disk_mb in [json!(1), json!(1_000_000), json!(-5), json!("big")] {
        let (status, body) = server
            .post_json(
                "/v1/sandboxes",
                json!({"language": "python", "created_by": "t", "disk_mb": disk_mb}),
            )
            .await;
        assert!((400..500).contains(&status), "{disk_mb}: {status} {body}");
    }
}

#[tokio::test]
async fn a_disk_outlives_a_crash_and_is_freed_on_delete() {
    let server = TestServer::start().await;
    let (_, health) = server.get_json("/health").await;
    assert_eq!(health["disk"]["mode"], "loop-ext4", "{health}");
    let (_, created) = server
        .post_json(
            "/v1/sandboxes",
            json!({"language": "python", "created_by": "t", "disk_mb": 32}),
        )
        .await;
    let id = created["id"].as_str().unwrap().to_string();
    server.exec(&id, "echo kept > kept.txt").await;
    let server = server.crash_and_restart().await;
    let again = server.exec(&id, &format!("cat kept.txt; {FILL}")).await;
    let output = again.done()["output"].as_str().unwrap().to_string();
    assert!(
        output.starts_with("kept\n") && output.contains("No space left"),
        "{output}"
    );
    let workspace = server.workspace(&id);
    assert!(petri_is_mounted(&workspace));
    assert_eq!(server.delete(&format!("/v1/sandboxes/{id}")).await, 204);
    assert!(!petri_is_mounted(&workspace) && !workspace.exists());
    let disks = workspace.parent().unwrap().parent().unwrap().join("disks");
    // Only the spares formatted ahead of time for new sandboxes remain.
    let images: Vec<_> = std::fs::read_dir(disks)
        .unwrap()
        .flatten()
        .map(|e| e.file_name().to_string_lossy().into_owned())
        .filter(|name| name != "spares")
        .collect();
    assert!(images.is_empty(), "the image is gone: {images:?}");
}

fn petri_is_mounted(path: &std::path::Path) -> bool {
    let table = std::fs::read_to_string("/proc/self/mountinfo").unwrap();
    table
        .lines()
        .any(|line| line.split(' ').nth(4) == Some(path.to_str().unwrap()))
}

#[tokio::test]
async fn new_sandboxes_take_a_disk_formatted_ahead_of_time() {
    let server = TestServer::start_with(&[("PETRI_DISK_MB", "96")]).await;
    let probe = server.sandbox().await;
    let spares = server
        .workspace(&probe)
        .parent()
        .unwrap()
        .parent()
        .unwrap()
        .join("disks/spares");
    let count = || std::fs::read_dir(&spares).map_or(0, |d| d.count());
    assert!(
        eventually(std::time::Duration::from_secs(10), async || count() == 2).await,
        "two spares wait for new sandboxes"
    );
    let names = || -> std::collections::BTreeSet<String> {
        std::fs::read_dir(&spares)
            .map(|d| {
                d.flatten()
                    .map(|e| e.file_name().to_string_lossy().into_owned())
                    .collect()
            })
            .unwrap_or_default()
    };
    let before = names();
    let id = server.sandbox().await;
    // The spare became this sandbox's own disk: its size, handed over to the sandbox.
    let df = server
        .exec(
            &id,
            "df -k --output=size . | tail -1; touch mine && echo ok",
        )
        .await;
    let output = df.done()["output"].as_str().unwrap().to_string();
    let kib: u64 = output.lines().next().unwrap().trim().parse().unwrap();
    assert!((70_000..100_000).contains(&kib), "a 96 MiB disk: {output}");
    assert!(output.ends_with("ok\n"), "{output}");
    // Spares are numbered as they are made: a new name means one was taken and replaced.
    assert!(
        eventually(std::time::Duration::from_secs(10), async || {
            let now = names();
            now.len() == 2 && now != before
        })
        .await,
        "the taken spare is replaced: {before:?} then {:?}",
        names()
    );
}
