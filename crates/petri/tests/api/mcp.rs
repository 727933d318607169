//! The `/mcp` endpoint (streamable HTTP). The tools themselves are exercised through the
//! official MCP client in `sdk/python/tests/test_mcp_http.py`; here, the endpoint's shape and
//! its refusal of foreign `Host` headers (DNS rebinding against a local server).

use crate::helpers::*;

const INITIALIZE: &str = r#"{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-03-26","capabilities":{},"clientInfo":{"name":"test","version":"1"}}}"#;

async fn initialize(server: &TestServer, host: Option<&str>) -> (u16, String) {
    let mut request = server
        .client
        .post(server.url("/mcp"))
        .header("content-type", "application/json")
        .header("accept", "application/json, text/event-stream")
        .body(INITIALIZE);
    if let Some(host) = host {
        request = request.header("host", host);
    }
    let response = request.send().await.unwrap();
    let status = response.status().as_u16();
    (status, response.text().await.unwrap_or_default())
}

#[tokio::test]
async fn mcp_answers_on_loopback_and_refuses_foreign_hosts() {
    let server = TestServer::start().await;
    let (status, body) = initialize(&server, None).await;
    assert_eq!(status, 200, "{body}");
    assert!(body.contains(r#""name":"petri""#), "{body}");
    assert!(
        body.contains(r#""tools""#),
        "the tools capability is offered: {body}"
    );
    let (status, body) = initialize(&server, Some("attacker.example")).await;
    assert!((400..500).contains(&status), "{status} {body}");
    let named = TestServer::start_with(&[("PETRI_MCP_ALLOWED_HOSTS", "petri.internal")]).await;
    assert_eq!(initialize(&named, Some("petri.internal")).await.0, 200);
    assert!((400..500).contains(&initialize(&named, Some("attacker.example")).await.0));
}
