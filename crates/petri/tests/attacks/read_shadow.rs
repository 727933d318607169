//! Reading `/etc/shadow`: directly, through `..`, through `/proc/1/root`, and by searching the
//! whole filesystem. Contained by the sandbox's minimal `/etc` (a generated `passwd`/`group`
//! and a few read-only files; no `shadow`, `gshadow` or host `passwd`).

use crate::helpers::*;
use crate::{assert_unaffected, bystander, sh};

#[tokio::test]
async fn etc_shadow_is_not_there() {
    let server = TestServer::start().await;
    let other = bystander(&server).await;
    let id = server.sandbox().await;
    let output = sh(
        &server,
        &id,
        "for f in /etc/shadow /etc/gshadow /usr/../etc/shadow /proc/1/root/etc/shadow \
                  /proc/self/root/etc/shadow; do cat $f 2>&1; done; \
         python3 -c \"open('/etc/shadow')\" 2>&1 | tail -1; \
         echo listing; ls -A /etc; echo found; find / \\( -path /proc -o -path /usr \\) -prune -o -name '*shadow*' -print 2>/dev/null; \
         echo passwd; cat /etc/passwd",
    )
    .await;
    for path in [
        "/etc/shadow",
        "/etc/gshadow",
        "/usr/../etc/shadow",
        "/proc/1/root/etc/shadow",
    ] {
        assert!(
            output.contains(&format!("cat: {path}: No such file or directory"))
                || output.contains(&format!("cat: {path}: Permission denied")),
            "{path}: {output}"
        );
    }
    assert!(
        output.contains("FileNotFoundError: [Errno 2] No such file or directory: '/etc/shadow'"),
        "{output}"
    );
    let (_, rest) = output.split_once("listing\n").unwrap();
    let (listing, rest) = rest.split_once("found\n").unwrap();
    assert!(!listing.contains("shadow"), "only a minimal /etc: {output}");
    let (found, passwd) = rest.split_once("passwd\n").unwrap();
    assert_eq!(found, "", "a shadow file is reachable: {output}");
    // The host's own accounts are not visible either: /etc/passwd is generated.
    assert!(passwd.starts_with("sandbox:x:1000:1000:"), "{passwd}");
    assert!(!passwd.contains("root:"), "{passwd}");
    if let Ok(host_shadow) = std::fs::read_to_string("/etc/shadow") {
        for line in host_shadow.lines().filter(|l| l.len() > 8) {
            assert!(!output.contains(line), "a host shadow line leaked: {line}");
        }
    }
    assert_unaffected(&server, &other).await;
}
