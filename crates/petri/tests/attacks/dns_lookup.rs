//! DNS lookups (name resolution is a data channel out, and the first step of any download).
//! Contained by the network namespace: no resolver configuration, no route to a name server,
//! so `getaddrinfo` fails and a direct query to 8.8.8.8:53 is unreachable.

use crate::helpers::*;
use crate::{CONNECT_PRELUDE, assert_unaffected, bystander, python, sh};

const DNS: &str = r#"
for name in ("pypi.org", "example.com"):
    try:
        print(name, socket.getaddrinfo(name, 443))
    except socket.gaierror as e:
        print(name, "failed")
udp("8.8.8.8", 53)
udp("2001:4860:4860::8888", 53)
"#;

#[tokio::test]
async fn dns_lookups_fail() {
    let server = TestServer::start().await;
    let other = bystander(&server).await;
    let id = server.sandbox().await;
    let output = python(&server, &id, &format!("{CONNECT_PRELUDE}{DNS}")).await;
    assert_eq!(
        output,
        "pypi.org failed\nexample.com failed\nudp 8.8.8.8:53 ENETUNREACH\n\
         udp 2001:4860:4860::8888:53 ENETUNREACH\n"
    );
    let output = sh(
        &server,
        &id,
        "getent hosts pypi.org; echo getent=$?; cat /etc/resolv.conf 2>&1 || true",
    )
    .await;
    assert!(output.starts_with("getent=2\n"), "{output}");
    assert!(output.contains("No such file or directory"), "{output}");
    assert_unaffected(&server, &other).await;
}
