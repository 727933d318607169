//! Reaching the cloud metadata service (`169.254.169.254`, and AWS's IPv6 `fd00:ec2::254`) for
//! instance credentials. Contained by the network namespace: no route at all (ENETUNREACH).

use crate::helpers::*;
use crate::{CONNECT_PRELUDE, assert_unaffected, bystander, python};

const METADATA: &str = r#"
connect("169.254.169.254", 80)
connect("fd00:ec2::254", 80)
udp("169.254.169.254", 53)
import urllib.request
try:
    urllib.request.urlopen("http://169.254.169.254/latest/meta-data/", timeout=3)
    print("http ok")
except OSError as e:
    print("http failed")
"#;

#[tokio::test]
async fn cloud_metadata_is_unreachable() {
    let server = TestServer::start().await;
    let other = bystander(&server).await;
    let id = server.sandbox().await;
    let output = python(&server, &id, &format!("{CONNECT_PRELUDE}{METADATA}")).await;
    assert_eq!(
        output,
        "169.254.169.254:80 ENETUNREACH\nfd00:ec2::254:80 ENETUNREACH\n\
         udp 169.254.169.254:53 ENETUNREACH\nhttp failed\n"
    );
    assert_unaffected(&server, &other).await;
}
