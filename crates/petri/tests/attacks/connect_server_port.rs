//! Connecting to the server's own port from inside a sandbox (its API would let code drive
//! every other sandbox). Contained by the network namespace: the sandbox's loopback is its own
//! and empty, so `127.0.0.1:<server port>` is refused, and the host's addresses are
//! unreachable.

use crate::helpers::*;
use crate::{CONNECT_PRELUDE, assert_unaffected, bystander, host_addresses, python, server_port};

#[tokio::test]
async fn the_servers_port_is_not_reachable() {
    let server = TestServer::start().await;
    let other = bystander(&server).await;
    let id = server.sandbox().await;
    let port = server_port(&server);
    // On the host the port answers.
    assert!(std::net::TcpStream::connect(("127.0.0.1", port)).is_ok());

    let mut script = format!(
        "{CONNECT_PRELUDE}\nconnect('127.0.0.1', {port})\nconnect('localhost', {port})\n\
         connect('::1', {port})\nconnect('127.0.0.1', 3128)\n"
    );
    let hosts = host_addresses();
    for address in &hosts {
        script.push_str(&format!("connect('{address}', {port})\n"));
    }
    script.push_str(&format!(
        "import urllib.request\ntry:\n    urllib.request.urlopen('http://127.0.0.1:{port}/health', timeout=3)\n    print('http ok')\nexcept OSError as e:\n    print('http failed')\n"
    ));
    let output = python(&server, &id, &script).await;
    for refused in [
        format!("127.0.0.1:{port} ECONNREFUSED"),
        format!("localhost:{port} ECONNREFUSED"),
        format!("::1:{port} ECONNREFUSED"),
        "127.0.0.1:3128 ECONNREFUSED".to_string(),
    ] {
        assert!(output.contains(&refused), "{refused}: {output}");
    }
    for address in &hosts {
        assert!(
            output.contains(&format!("{address}:{port} ENETUNREACH")),
            "{address}: {output}"
        );
    }
    assert!(output.ends_with("http failed\n"), "{output}");
    assert!(!output.contains("connected"), "{output}");
    assert_unaffected(&server, &other).await;
}
