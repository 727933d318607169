use std::sync::Mutex;

use tokio::io::{AsyncReadExt, AsyncWriteExt};

use super::*;
use crate::MirroredRegistries;

#[derive(Debug, Default)]
struct Recorder(Mutex<Vec<ConnectionEvent>>);

impl AuditSink for Recorder {
    fn record(&self, event: ConnectionEvent) {
        self.0.lock().unwrap().push(event);
    }
}

async fn start(allowlist: Allowlist) -> (SocketAddr, Arc<Recorder>) {
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let addr = listener.local_addr().unwrap();
    let recorder = Arc::new(Recorder::default());
    let tag = ProxyTag {
        sandbox_id: "sb_test".into(),
        run_id: "run_test".into(),
    };
    EgressProxy::new(allowlist)
        .serve(listener, tag, recorder.clone())
        .unwrap();
    (addr, recorder)
}

async fn connect(proxy: SocketAddr, request: &str) -> (String, TcpStream) {
    let mut stream = TcpStream::connect(proxy).await.unwrap();
    stream.write_all(request.as_bytes()).await.unwrap();
    let mut head = Vec::new();
    let mut byte = [0u8; 1];
    while !head.ends_with(b"\r\n\r\n") {
        if stream.read(&mut byte).await.unwrap() == 0 {
            break;
        }
        head.push(byte[0]);
    }
    (String::from_utf8_lossy(&head).into_owned(), stream)
}

#[tokio::test]
async fn refuses_hosts_methods_and_internal_addresses() {
    let mut list = Allowlist::parse("pypi.org,localhost:9").unwrap();
    list.allow_private = false;
    let (proxy, recorder) = start(list).await;
    let (head, _) = connect(
        proxy,
        "CONNECT github.com:443 HTTP/1.1\r\nHost: github.com:443\r\n\r\n",
    )
    .await;
    assert!(head.starts_with("HTTP/1.1 403"), "{head}");
    let (head, _) = connect(
        proxy,
        "GET http://pypi.org/ HTTP/1.1\r\nHost: pypi.org\r\n\r\n",
    )
    .await;
    assert!(head.starts_with("HTTP/1.1 405"), "{head}");
    let (head, _) = connect(
        proxy,
        "CONNECT 127.0.0.1:443 HTTP/1.1\r\nHost: 127.0.0.1:443\r\n\r\n",
    )
    .await;
    assert!(
        head.starts_with("HTTP/1.1 400") || head.starts_with("HTTP/1.1 403"),
        "{head}"
    );
    // Allowlisted, but the name resolves to the host itself.
    let (head, _) = connect(
        proxy,
        "CONNECT localhost:9 HTTP/1.1\r\nHost: localhost:9\r\n\r\n",
    )
    .await;
    assert!(head.starts_with("HTTP/1.1 403"), "{head}");
    let events = recorder.0.lock().unwrap().clone();
    assert_eq!(events.len(), 4);
    assert!(
        events
            .iter()
            .all(|e| !e.allowed && e.tag.run_id == "run_test")
    );
}

#[tokio::test]
async fn tunnels_to_an_allowed_destination_and_counts_bytes() {
    let upstream = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let port = upstream.local_addr().unwrap().port();
    tokio::spawn(async move {
        let (mut socket, _) = upstream.accept().await.unwrap();
        let mut buf = [0u8; 4];
        socket.read_exact(&mut buf).await.unwrap();
        socket.write_all(b"pong").await.unwrap();
    });
    let mut list = Allowlist::parse(&format!("localhost:{port}")).unwrap();
    list.allow_private = true;
    let (proxy, recorder) = start(list).await;
    let request = format!("CONNECT localhost:{port} HTTP/1.1\r\nHost: localhost:{port}\r\n\r\n");
    let (head, mut tunnel) = connect(proxy, &request).await;
    assert!(head.starts_with("HTTP/1.1 200"), "{head}");
    tunnel.write_all(b"ping").await.unwrap();
    let mut answer = [0u8; 4];
    tunnel.read_exact(&mut answer).await.unwrap();
    assert_eq!(&answer, b"pong");
    drop(tunnel);
    for _ in 0..50 {
        if !recorder.0.lock().unwrap().is_empty() {
            break;
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    let events = recorder.0.lock().unwrap().clone();
    assert_eq!(events.len(), 1, "{events:?}");
    assert!(events[0].allowed);
    assert_eq!((events[0].bytes_up, events[0].bytes_down), (4, 4));
}

#[test]
fn internal_addresses_are_recognised() {
    for ip in [
        "127.0.0.1",
        "10.1.2.3",
        "192.168.0.1",
        "169.254.169.254",
        "0.0.0.0",
        "::1",
        "fd00::1",
        "fe80::1",
        "::ffff:127.0.0.1",
    ] {
        assert!(is_internal(ip.parse().unwrap()), "{ip}");
    }
    for ip in ["203.0.113.80", "151.101.0.223", "2a04:4e42::223"] {
        assert!(!is_internal(ip.parse().unwrap()), "{ip}");
    }
}

#[tokio::test]
async fn tunnels_go_through_a_configured_upstream_proxy() {
    let upstream = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let address = upstream.local_addr().unwrap();
    tokio::spawn(async move {
        let (mut socket, _) = upstream.accept().await.unwrap();
        let mut head = Vec::new();
        let mut byte = [0u8; 1];
        while !head.ends_with(b"\r\n\r\n") {
            socket.read_exact(&mut byte).await.unwrap();
            head.push(byte[0]);
        }
        assert!(head.starts_with(b"CONNECT pypi.org:443 HTTP/1.1"));
        socket
            .write_all(b"HTTP/1.1 200 Connection established\r\n\r\n")
            .await
            .unwrap();
        let mut buf = [0u8; 4];
        socket.read_exact(&mut buf).await.unwrap();
        socket.write_all(&buf).await.unwrap();
    });
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let proxy_addr = listener.local_addr().unwrap();
    let recorder = Arc::new(Recorder::default());
    let tag = ProxyTag {
        sandbox_id: "sb".into(),
        run_id: "run".into(),
    };
    EgressProxy::new(Allowlist::parse("pypi.org").unwrap())
        .with_upstream(&format!("http://{address}"))
        .unwrap()
        .serve(listener, tag, recorder.clone())
        .unwrap();
    let (head, mut tunnel) = connect(
        proxy_addr,
        "CONNECT pypi.org:443 HTTP/1.1\r\nHost: pypi.org:443\r\n\r\n",
    )
    .await;
    assert!(head.starts_with("HTTP/1.1 200"), "{head}");
    tunnel.write_all(b"echo").await.unwrap();
    let mut answer = [0u8; 4];
    tunnel.read_exact(&mut answer).await.unwrap();
    assert_eq!(&answer, b"echo");
    // The allowlist still applies before anything reaches the upstream proxy.
    let (head, _) = connect(
        proxy_addr,
        "CONNECT github.com:443 HTTP/1.1\r\nHost: github.com:443\r\n\r\n",
    )
    .await;
    assert!(head.starts_with("HTTP/1.1 403"), "{head}");
    assert!(
        EgressProxy::new(Allowlist::parse("").unwrap())
            .with_upstream("nonsense")
            .is_err()
    );
}

/// Installers probe files with HEAD before downloading them (reaches Maven Central).
#[tokio::test]
async fn the_mirror_answers_head_without_a_body_and_logs_it() {
    let cache = tempfile::tempdir().unwrap();
    let registries = MirroredRegistries {
        maven: true,
        ..MirroredRegistries::default()
    };
    let mirror =
        RegistryMirror::new(cache.path().to_path_buf(), None, 1 << 30, registries).unwrap();
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let proxy = listener.local_addr().unwrap();
    let recorder = Arc::new(Recorder::default());
    let tag = ProxyTag {
        sandbox_id: "sb_test".into(),
        run_id: "run_test".into(),
    };
    EgressProxy::new(Allowlist::parse("repo.maven.apache.org").unwrap())
        .with_mirror(mirror)
        .serve(listener, tag, recorder.clone())
        .unwrap();
    let path = "/maven2/junit/junit/4.13.2/junit-4.13.2.pom";
    let (head, mut stream) = connect(
        proxy,
        &format!("HEAD {path} HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n\r\n"),
    )
    .await;
    assert!(head.starts_with("HTTP/1.1 200"), "{head}");
    let mut rest = Vec::new();
    stream.read_to_end(&mut rest).await.unwrap();
    assert!(rest.is_empty(), "a HEAD answer has no body");
    let events = recorder.0.lock().unwrap().clone();
    assert_eq!(events[0].target, format!("mirror HEAD {path}"));
    assert!(events[0].allowed);
}
