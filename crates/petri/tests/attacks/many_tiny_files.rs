//! 100,000 tiny files: sandboxed code creates them in its workspace. Contained by bounded
//! server work on workspaces: the listing stops at its entry cap, and deleting the sandbox
//! removes the tree without hanging or crashing the server.

use std::time::Duration;

use crate::helpers::*;
use crate::{assert_unaffected, bystander, sh};

#[tokio::test]
async fn a_hundred_thousand_files_are_listed_and_deleted() {
    let server = TestServer::start().await;
    let other = bystander(&server).await;
    let id = server.sandbox().await;
    let count = sh(
        &server,
        &id,
        "mkdir /sandbox/many && cd /sandbox/many && seq 100000 | xargs touch && ls | wc -l",
    )
    .await;
    assert_eq!(count.trim(), "100000");
    assert_eq!(
        std::fs::read_dir(server.workspace(&id).join("many"))
            .unwrap()
            .count(),
        100_000
    );

    let listing = tokio::time::timeout(
        Duration::from_secs(30),
        server.get_json(&format!("/v1/sandboxes/{id}/files")),
    )
    .await
    .expect("listing 100,000 files hung");
    assert_eq!(listing.0, 200);
    let entries = listing.1.as_array().unwrap().len();
    assert!((1..=10_000).contains(&entries), "{entries} entries listed");

    let deleted = tokio::time::timeout(
        Duration::from_secs(60),
        server.delete(&format!("/v1/sandboxes/{id}")),
    )
    .await
    .expect("deleting 100,000 files hung");
    assert_eq!(deleted, 204);
    assert!(
        !exists(&server.workspace(&id)),
        "the workspace was not freed"
    );
    assert_eq!(server.get_json(&format!("/v1/sandboxes/{id}")).await.0, 404);
    assert_eq!(server.runs(&id).await.len(), 1, "the run history is kept");
    assert_unaffected(&server, &other).await;
}
