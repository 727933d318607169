//! Raw sockets: `AF_PACKET`/`SOCK_RAW` (sniffing and forging frames) and `AF_INET`/`AF_INET6`
//! `SOCK_RAW` (forging IP packets). Contained by having no `CAP_NET_RAW`: EPERM.

use crate::helpers::*;
use crate::{assert_unaffected, bystander, python};

const RAW: &str = r#"
import errno, socket
for name, family, kind, proto in [
    ("packet_raw", socket.AF_PACKET, socket.SOCK_RAW, socket.htons(0x0003)),
    ("packet_dgram", socket.AF_PACKET, socket.SOCK_DGRAM, socket.htons(0x0003)),
    ("inet_raw_icmp", socket.AF_INET, socket.SOCK_RAW, socket.IPPROTO_ICMP),
    ("inet_raw_ip", socket.AF_INET, socket.SOCK_RAW, socket.IPPROTO_RAW),
    ("inet6_raw", socket.AF_INET6, socket.SOCK_RAW, socket.IPPROTO_ICMPV6),
]:
    try:
        socket.socket(family, kind, proto).close()
        print(name, "opened")
    except OSError as e:
        print(name, errno.errorcode[e.errno])
"#;

#[tokio::test]
async fn raw_sockets_are_denied() {
    let server = TestServer::start().await;
    let other = bystander(&server).await;
    let id = server.sandbox().await;
    let output = python(&server, &id, RAW).await;
    assert_eq!(
        output,
        "packet_raw EPERM\npacket_dgram EPERM\ninet_raw_icmp EPERM\ninet_raw_ip EPERM\ninet6_raw EPERM\n"
    );
    assert_unaffected(&server, &other).await;
}
