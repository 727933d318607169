//! Reaching the LAN and the internet: private ranges (`10.0.0.1`, `192.168.1.1`, a Docker
//! bridge), the host's own addresses (`hostname -I`), and a public address, over TCP and UDP.
//! Contained by the network namespace: only `lo` exists, and there is no route (ENETUNREACH).

use crate::helpers::*;
use crate::{CONNECT_PRELUDE, assert_unaffected, bystander, host_addresses, python};

#[tokio::test]
async fn no_network_beyond_loopback() {
    let server = TestServer::start().await;
    let other = bystander(&server).await;
    let id = server.sandbox().await;
    let mut targets = vec!["10.0.0.1", "192.168.1.1", "172.17.0.1", "1.1.1.1"]
        .into_iter()
        .map(str::to_string)
        .collect::<Vec<_>>();
    targets.extend(host_addresses());
    let mut script = format!(
        "{CONNECT_PRELUDE}\nimport os\nprint('interfaces', sorted(os.listdir('/proc/sys/net/ipv4/conf')))\n\
         print('devices', [l.split(':')[0].strip() for l in open('/proc/net/dev').readlines()[2:]])\n"
    );
    for target in &targets {
        script.push_str(&format!("connect('{target}', 80)\nudp('{target}', 53)\n"));
    }
    let output = python(&server, &id, &script).await;
    assert!(
        output.contains("devices ['lo']\n"),
        "only loopback: {output}"
    );
    assert!(!output.contains("eth0"), "{output}");
    for target in &targets {
        assert!(
            output.contains(&format!("\n{target}:80 ENETUNREACH\n")),
            "{target}: {output}"
        );
        assert!(
            output.contains(&format!("udp {target}:53 ENETUNREACH")),
            "{target}: {output}"
        );
    }
    assert_unaffected(&server, &other).await;
}
