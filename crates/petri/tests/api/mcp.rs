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

/// An agent's open session stream (the GET /mcp event stream) must not hold the server's
/// graceful shutdown open.
#[tokio::test]
async fn an_open_mcp_session_does_not_keep_the_server_from_stopping() {
    let mut server = TestServer::start().await;
    let initialized = server
        .client
        .post(server.url("/mcp"))
        .header("content-type", "application/json")
        .header("accept", "application/json, text/event-stream")
        .body(INITIALIZE)
        .send()
        .await
        .unwrap();
    let session = initialized
        .headers()
        .get("mcp-session-id")
        .expect("a session id")
        .to_str()
        .unwrap()
        .to_string();
    drop(initialized);
    let stream = server
        .client
        .get(server.url("/mcp"))
        .header("accept", "text/event-stream")
        .header("mcp-session-id", &session)
        .send()
        .await
        .unwrap();
    assert_eq!(stream.status().as_u16(), 200);
    let status = server.terminate_within(std::time::Duration::from_secs(10));
    assert!(
        status.is_some_and(|s| s.success()),
        "the server did not stop within 10 s with a session open: {status:?}"
    );
    drop(stream);
}
