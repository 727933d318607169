//! Disk fill: writing until the disk is full, by one big file and by many small ones.
//! Contained by the sandbox's own filesystem of `disk_mb` (a loop-mounted ext4 image, as
//! root): writes fail with ENOSPC inside that sandbox, the host's disk and every other
//! sandbox keep their space, and deleting files frees it again.

use serde_json::json;

use crate::helpers::*;
use crate::{assert_unaffected, bystander};

/// Free bytes of the filesystem holding `path`, as the host sees it.
fn host_free_bytes(path: &std::path::Path) -> u64 {
    let out = std::process::Command::new("df")
        .args(["--output=avail", "-B1"])
        .arg(path)
        .output()
        .unwrap();
    String::from_utf8_lossy(&out.stdout)
        .lines()
        .last()
        .unwrap()
        .trim()
        .parse()
        .unwrap()
}

#[tokio::test]
async fn filling_the_disk_stops_at_the_sandboxs_quota() {
    let server = TestServer::start().await;
    let other = bystander(&server).await;
    let id = server.create(json!({"disk_mb": 64})).await;
    let state = server.workspace(&other).parent().unwrap().to_path_buf();
    let free_before = host_free_bytes(&state);

    let big = server
        .exec_body(
            &id,
            json!({"command": "dd if=/dev/zero of=fill bs=1M count=2000 2>&1; stat -c %s fill", "timeout": 60}),
        )
        .await;
    let output = big.done()["output"].as_str().unwrap().to_string();
    assert!(output.contains("No space left on device"), "{output}");
    let written: u64 = output.lines().last().unwrap().trim().parse().unwrap();
    assert!(
        written <= 64 << 20,
        "wrote {written} bytes into a 64 MiB disk"
    );

    let small = server
        .exec_body(
            &id,
            json!({"command": "python3 -c \"\nimport os\nn = 0\ntry:\n    while True:\n        with open(f'small{n}', 'w') as f:\n            f.write('x' * 4096)\n        n += 1\nexcept OSError as e:\n    print(n, e.strerror)\n\"", "timeout": 60}),
        )
        .await;
    let output = small.done()["output"].as_str().unwrap().to_string();
    assert!(output.contains("No space left on device"), "{output}");

    // The host lost at most the sandbox's quota, not its disk.
    let used = free_before.saturating_sub(host_free_bytes(&state));
    assert!(
        used <= 80 << 20,
        "the host lost {used} bytes to a 64 MiB sandbox"
    );
    // Freeing space inside works again; the full sandbox hurts no one else.
    let freed = server
        .exec(&id, "rm -f fill small* && echo again > f && cat f")
        .await;
    assert_eq!(freed.done()["output"], "again\n", "{}", freed.raw);
    let room = server
        .exec(
            &other,
            "dd if=/dev/zero of=room bs=1M count=100 2>/dev/null && rm room && echo room",
        )
        .await;
    assert_eq!(room.done()["output"], "room\n", "{}", room.raw);
    assert_unaffected(&server, &other).await;
}
