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
    assert_eq!(
        std::fs::read_dir(disks).unwrap().count(),
        0,
        "the image is gone"
    );
}

fn petri_is_mounted(path: &std::path::Path) -> bool {
    let table = std::fs::read_to_string("/proc/self/mountinfo").unwrap();
    table
        .lines()
        .any(|line| line.split(' ').nth(4) == Some(path.to_str().unwrap()))
}
