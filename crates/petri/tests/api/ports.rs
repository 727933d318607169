//! Port preview: `/v1/sandboxes/{id}/ports/{port}/...` reaches a server inside the sandbox,
//! streaming and WebSocket included, and reaches nothing else.

use std::time::Duration;

use futures_util::{SinkExt, StreamExt};
use serde_json::{Value, json};
use tokio_tungstenite::tungstenite::Message;

use crate::helpers::{TestServer, eventually};

/// An HTTP app (port 8080) and a WebSocket echo server (port 8765), stdlib only.
const APP: &str = r#"
import base64, hashlib, http.server, json, os, socket, threading, time

class App(http.server.BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    def log_message(self, *args):
        pass
    def reply(self, status, body, kind="application/json"):
        self.send_response(status)
        self.send_header("Content-Type", kind)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)
    def do_GET(self):
        if self.path == "/stream":
            self.send_response(200)
            self.send_header("Content-Type", "text/plain")
            self.send_header("Transfer-Encoding", "chunked")
            self.end_headers()
            def chunk(data):
                self.wfile.write(b"%x\r\n%s\r\n" % (len(data), data))
                self.wfile.flush()
            chunk(b"first\n")
            # The rest only once the test has seen the first chunk through the proxy.
            while not os.path.exists("/sandbox/go"):
                time.sleep(0.05)
            chunk(b"second\n")
            self.wfile.write(b"0\r\n\r\n")
            return
        seen = {"path": self.path, "host": self.headers.get("Host"),
                "prefix": self.headers.get("X-Forwarded-Prefix"),
                "x_secret": self.headers.get("X-Secret")}
        self.reply(200, json.dumps(seen).encode())
    def do_POST(self):
        body = self.rfile.read(int(self.headers["Content-Length"]))
        self.send_response(201)
        self.send_header("Set-Cookie", "session=1; Path=/")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body[::-1])

def websocket(conn):
    request = b""
    while b"\r\n\r\n" not in request:
        request += conn.recv(4096)
    key = [l.split(b":", 1)[1].strip() for l in request.split(b"\r\n")
           if l.lower().startswith(b"sec-websocket-key:")][0]
    accept = base64.b64encode(hashlib.sha1(key + b"258EAFA5-E914-47DA-95CA-C5AB0DC85B11").digest())
    conn.sendall(b"HTTP/1.1 101 Switching Protocols\r\nUpgrade: websocket\r\n"
                 b"Connection: Upgrade\r\nSec-WebSocket-Accept: " + accept + b"\r\n\r\n")
    def exactly(n):
        data = b""
        while len(data) < n:
            part = conn.recv(n - len(data))
            if not part:
                raise EOFError
            data += part
        return data
    while True:
        first, second = exactly(2)
        length = second & 0x7F
        if length == 126:
            length = int.from_bytes(exactly(2), "big")
        mask = exactly(4)
        payload = bytes(b ^ mask[i % 4] for i, b in enumerate(exactly(length)))
        if first & 0x0F == 8:
            return
        reply = b"echo: " + payload
        conn.sendall(bytes([0x81, len(reply)]) + reply)

def serve_websockets():
    listener = socket.socket()
    listener.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    listener.bind(("127.0.0.1", 8765))
    listener.listen()
    while True:
        conn, _ = listener.accept()
        threading.Thread(target=websocket, args=(conn,), daemon=True).start()

threading.Thread(target=serve_websockets, daemon=True).start()
print("serving", flush=True)
http.server.ThreadingHTTPServer(("127.0.0.1", 8080), App).serve_forever()
"#;

async fn serve_app(server: &TestServer) -> String {
    let id = server.sandbox().await;
    server.upload(&id, "app.py", APP.as_bytes().to_vec()).await;
    let (status, started) = server
        .post_json(
            &format!("/v1/sandboxes/{id}/exec"),
            json!({"command": "python app.py", "background": true}),
        )
        .await;
    assert_eq!(status, 202, "{started}");
    let ready = eventually(Duration::from_secs(20), async || {
        server
            .get(&format!("/v1/sandboxes/{id}/ports/8080/ready"))
            .await
            .status()
            .as_u16()
            == 200
    })
    .await;
    assert!(ready, "the app never answered through the preview");
    id
}

#[tokio::test]
async fn requests_reach_the_sandboxed_app_with_its_path_query_and_body() {
    let server = TestServer::start().await;
    let id = serve_app(&server).await;
    let prefix = format!("/v1/sandboxes/{id}/ports/8080");

    let response = server
        .client
        .get(server.url(&format!("{prefix}/items/a%20b?q=1&r=%2F")))
        .header("X-Secret", "kept")
        .header("Connection", "X-Secret")
        .send()
        .await
        .unwrap();
    assert_eq!(response.status().as_u16(), 200);
    let csp = response.headers()["content-security-policy"]
        .to_str()
        .unwrap()
        .to_string();
    assert!(csp.starts_with("sandbox "), "{csp}");
    assert!(!csp.contains("allow-same-origin"), "{csp}");
    let seen: Value = response.json().await.unwrap();
    assert_eq!(seen["path"], "/items/a%20b?q=1&r=%2F");
    assert_eq!(seen["host"], "localhost:8080");
    assert_eq!(seen["prefix"], prefix.as_str());
    // A header the client marked hop-by-hop is not forwarded.
    assert_eq!(seen["x_secret"], Value::Null);

    let (status, root) = server.get_json(&prefix).await;
    assert_eq!(status, 200);
    assert_eq!(root["path"], "/");

    // By host name, each sandbox and port is an origin of its own: the path goes untouched
    // and no opaque-origin policy is needed.
    let hex = id.strip_prefix("sb_").unwrap();
    let by_host = server
        .client
        .get(server.url("/v1/items?q=2"))
        .header("Host", format!("8080-{hex}.localhost:8000"))
        .send()
        .await
        .unwrap();
    assert_eq!(by_host.status().as_u16(), 200);
    assert!(by_host.headers().get("content-security-policy").is_none());
    let seen: Value = by_host.json().await.unwrap();
    assert_eq!(seen["path"], "/v1/items?q=2");
    assert_eq!(seen["prefix"], Value::Null);
    let unknown = server
        .client
        .get(server.url("/"))
        .header(
            "Host",
            "8080-00000000000000000000000000000000.localhost".to_string(),
        )
        .send()
        .await
        .unwrap();
    assert_eq!(unknown.status().as_u16(), 404);
    // Any other host name is the API.
    let api = server
        .client
        .get(server.url("/health"))
        .header("Host", format!("8080-{hex}.elsewhere.example"))
        .send()
        .await
        .unwrap();
    assert_eq!(api.status().as_u16(), 200);

    let posted = server
        .client
        .post(server.url(&format!("{prefix}/echo")))
        .body("hello body")
        .send()
        .await
        .unwrap();
    assert_eq!(posted.status().as_u16(), 201);
    assert_eq!(posted.text().await.unwrap(), "ydob olleh");
}

#[tokio::test]
async fn streaming_responses_arrive_as_they_are_written() {
    let server = TestServer::start().await;
    let id = serve_app(&server).await;
    let mut response = server
        .get(&format!("/v1/sandboxes/{id}/ports/8080/stream"))
        .await;
    assert_eq!(response.status().as_u16(), 200);
    let first = tokio::time::timeout(Duration::from_secs(10), response.chunk())
        .await
        .expect("the first chunk was held back until the response ended")
        .unwrap()
        .unwrap();
    assert_eq!(&first[..], b"first\n");
    // Only now does the app write the rest.
    server.upload(&id, "go", Vec::new()).await;
    let rest = tokio::time::timeout(Duration::from_secs(10), response.text())
        .await
        .expect("the stream did not end")
        .unwrap();
    assert_eq!(rest, "second\n");
}

#[tokio::test]
async fn websockets_are_upgraded_through_the_preview() {
    let server = TestServer::start().await;
    let id = serve_app(&server).await;
    let url = format!(
        "{}/v1/sandboxes/{id}/ports/8765/socket",
        server.url.replacen("http://", "ws://", 1)
    );
    let (mut socket, response) = tokio::time::timeout(
        Duration::from_secs(10),
        tokio_tungstenite::connect_async(url),
    )
    .await
    .expect("the handshake hung")
    .expect("the WebSocket handshake failed");
    assert_eq!(response.status().as_u16(), 101);
    for word in ["hello", "sandbox"] {
        socket.send(Message::text(word)).await.unwrap();
        let reply = tokio::time::timeout(Duration::from_secs(10), socket.next())
            .await
            .expect("no reply")
            .unwrap()
            .unwrap();
        assert_eq!(reply.into_text().unwrap().as_str(), format!("echo: {word}"));
    }
    socket.close(None).await.unwrap();
}

#[tokio::test]
async fn the_preview_reaches_only_the_sandboxs_own_loopback() {
    let server = TestServer::start().await;
    let id = serve_app(&server).await;
    let other = server.sandbox().await;

    // Another sandbox has a network of its own: the app is not there, not even on localhost.
    let probe = "python -c \"import socket; socket.create_connection(('127.0.0.1', 8080), 2)\"";
    let got = server.exec(&other, probe).await;
    assert_ne!(got.done()["exit_code"], 0, "{}", got.raw);
    assert!(got.raw.contains("Connection refused"), "{}", got.raw);
    let (status, error) = server
        .get_json(&format!("/v1/sandboxes/{other}/ports/8080/"))
        .await;
    assert_eq!((status, error["code"].as_str()), (502, Some("port_closed")));

    // The server's own port is a host port: through the preview it is closed.
    let own_port = server.url.rsplit(':').next().unwrap().to_string();
    let (status, error) = server
        .get_json(&format!("/v1/sandboxes/{id}/ports/{own_port}/health"))
        .await;
    assert_eq!(
        (status, error["code"].as_str()),
        (502, Some("port_closed")),
        "{error}"
    );

    for port in ["0", "65536", "http", "-1"] {
        let (status, error) = server
            .get_json(&format!("/v1/sandboxes/{id}/ports/{port}/"))
            .await;
        assert_eq!(
            (status, error["code"].as_str()),
            (422, Some("invalid_input")),
            "{port}: {error}"
        );
    }
    let (status, _) = server
        .get_json("/v1/sandboxes/sb_00000000000000000000000000000000/ports/8080/")
        .await;
    assert_eq!(status, 404);

    // Once the sandbox is gone, so is its preview.
    assert_eq!(server.delete(&format!("/v1/sandboxes/{id}")).await, 204);
    let (status, _) = server
        .get_json(&format!("/v1/sandboxes/{id}/ports/8080/"))
        .await;
    assert_eq!(status, 404);
}

/// Without root the preview cannot enter the namespace from a server thread; a helper child
/// running as the namespace's owner connects instead.
#[tokio::test]
async fn an_unprivileged_server_previews_too() {
    let server = TestServer::start_as_nobody().await;
    let id = serve_app(&server).await;
    let (status, seen) = server
        .get_json(&format!("/v1/sandboxes/{id}/ports/8080/unprivileged"))
        .await;
    assert_eq!(status, 200, "{seen}");
    assert_eq!(seen["path"], "/unprivileged");
    let (status, error) = server
        .get_json(&format!("/v1/sandboxes/{id}/ports/8081/"))
        .await;
    assert_eq!((status, error["code"].as_str()), (502, Some("port_closed")));
}
