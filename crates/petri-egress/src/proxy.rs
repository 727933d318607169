//! The CONNECT proxy itself (hyper), one accept loop per sandbox listener.

use std::convert::Infallible;
use std::net::{IpAddr, SocketAddr};
use std::sync::Arc;
use std::time::Duration;

use bytes::Bytes;
use http_body_util::combinators::BoxBody;
use http_body_util::{BodyExt, Empty, Full};
use hyper::body::Incoming;
use hyper::{Method, Request, Response, StatusCode};
use hyper_util::rt::TokioIo;
use tokio::net::TcpStream;

use crate::Allowlist;
use crate::allowlist::normalise_host;
use crate::mirror::{RegistryMirror, is_mirror_path};

/// Body of every proxy response: small messages, or a cached file streamed from disk.
pub(crate) type ProxyBody = BoxBody<Bytes, std::io::Error>;

const CONNECT_TIMEOUT: Duration = Duration::from_secs(10);
/// A client that does not finish its request head in this time is dropped.
const HEADER_TIMEOUT: Duration = Duration::from_secs(10);

/// Whose traffic a listener carries.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ProxyTag {
    pub sandbox_id: String,
    pub run_id: String,
}

/// One connection attempt through the proxy.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ConnectionEvent {
    pub tag: ProxyTag,
    /// The requested target as the sandbox sent it (host:port, or the method and URI).
    pub target: String,
    pub allowed: bool,
    /// Why it was refused, or how the tunnel ended.
    pub detail: Option<String>,
    pub bytes_up: u64,
    pub bytes_down: u64,
}

/// Receives every connection event (the engine records them against the run).
pub trait AuditSink: Send + Sync + std::fmt::Debug {
    fn record(&self, event: ConnectionEvent);
}

/// The proxy: an allowlist shared by every listener it serves, and optionally the PyPI
/// mirror on the same listener.
#[derive(Debug, Clone)]
pub struct EgressProxy {
    allowlist: Arc<Allowlist>,
    mirror: Option<RegistryMirror>,
    /// `host:port` of an HTTP proxy all tunnels go through (a corporate egress proxy).
    upstream: Option<String>,
}

/// Addresses a registry name must never resolve to (unless private mirrors are allowed):
/// the host itself, the LAN, link-local (cloud metadata at 169.254.169.254).
fn is_internal(ip: IpAddr) -> bool {
    match ip {
        IpAddr::V4(v4) => {
            v4.is_loopback()
                || v4.is_private()
                || v4.is_link_local()
                || v4.is_unspecified()
                || v4.is_broadcast()
                || v4.is_multicast()
                || v4.octets()[0] == 0
        }
        IpAddr::V6(v6) => match v6.to_ipv4_mapped() {
            Some(v4) => is_internal(IpAddr::V4(v4)),
            None => {
                v6.is_loopback()
                    || v6.is_unspecified()
                    || v6.is_multicast()
                    || (v6.segments()[0] & 0xfe00) == 0xfc00
                    || (v6.segments()[0] & 0xffc0) == 0xfe80
            }
        },
    }
}

pub(crate) fn reply(status: StatusCode, text: &str) -> Response<ProxyBody> {
    let body = Full::new(Bytes::from(format!("{text}\n")))
        .map_err(|never| match never {})
        .boxed();
    let mut response = Response::new(body);
    *response.status_mut() = status;
    response
}

impl EgressProxy {
    pub fn new(allowlist: Allowlist) -> Self {
        Self {
            allowlist: Arc::new(allowlist),
            mirror: None,
            upstream: None,
        }
    }

    /// Sends every allowed tunnel through the HTTP proxy at `upstream` (`http://host:port` or
    /// `host:port`), which then resolves the names.
    pub fn with_upstream(mut self, upstream: &str) -> Result<Self, String> {
        let address = upstream.trim_start_matches("http://").trim_end_matches('/');
        match address.rsplit_once(':') {
            Some((host, port)) if !host.is_empty() && port.parse::<u16>().is_ok() => {
                self.upstream = Some(address.to_string());
                Ok(self)
            }
            _ => Err(format!("upstream proxy {upstream:?} is not host:port")),
        }
    }

    /// Serves `mirror` (under `/pypi/` and `/npm/`) on every listener.
    pub fn with_mirror(mut self, mirror: RegistryMirror) -> Self {
        self.mirror = Some(mirror);
        self
    }

    /// The mirror served on every listener, if any.
    pub fn mirror(&self) -> Option<&RegistryMirror> {
        self.mirror.as_ref()
    }

    pub fn allowlist(&self) -> &Allowlist {
        &self.allowlist
    }

    /// Serves `listener` (bound inside a sandbox's network namespace) until the returned
    /// task is aborted. Must be called inside a tokio runtime.
    pub fn serve(
        &self,
        listener: std::net::TcpListener,
        tag: ProxyTag,
        sink: Arc<dyn AuditSink>,
    ) -> std::io::Result<tokio::task::JoinHandle<()>> {
        listener.set_nonblocking(true)?;
        let listener = tokio::net::TcpListener::from_std(listener)?;
        let proxy = self.clone();
        Ok(tokio::spawn(async move {
            loop {
                let Ok((stream, _)) = listener.accept().await else {
                    continue;
                };
                // Mirror responses are small writes; without this each waits ~40 ms on the
                // installer's delayed ACK, and installs make hundreds of requests.
                let _ = stream.set_nodelay(true);
                let (proxy, tag, sink) = (proxy.clone(), tag.clone(), sink.clone());
                tokio::spawn(async move {
                    let service = hyper::service::service_fn(move |request| {
                        let (proxy, tag, sink) = (proxy.clone(), tag.clone(), sink.clone());
                        async move { Ok::<_, Infallible>(proxy.handle(request, tag, sink).await) }
                    });
                    let connection = hyper::server::conn::http1::Builder::new()
                        .header_read_timeout(HEADER_TIMEOUT)
                        .timer(hyper_util::rt::TokioTimer::new())
                        .serve_connection(TokioIo::new(stream), service)
                        .with_upgrades();
                    if let Err(e) = connection.await {
                        tracing::debug!(error = %e, "egress proxy connection ended with an error");
                    }
                });
            }
        }))
    }

    async fn handle(
        &self,
        request: Request<Incoming>,
        tag: ProxyTag,
        sink: Arc<dyn AuditSink>,
    ) -> Response<ProxyBody> {
        let head = request.method() == Method::HEAD;
        if (request.method() == Method::GET || head)
            && is_mirror_path(request.uri().path())
            && let Some(mirror) = &self.mirror
        {
            let path = request.uri().path().to_string();
            let accept = request
                .headers()
                .get(hyper::header::ACCEPT)
                .and_then(|v| v.to_str().ok())
                .map(str::to_string);
            let served = mirror.serve(&path, accept.as_deref()).await;
            sink.record(ConnectionEvent {
                tag,
                target: format!("mirror {} {path}", request.method()),
                allowed: served.response.status().is_success(),
                detail: Some(served.detail),
                bytes_up: 0,
                bytes_down: if head { 0 } else { served.bytes },
            });
            if head {
                // Installers probe with HEAD before a GET: the same answer, without the body
                // (the file is then already in the cache for the GET that follows).
                let (parts, _) = served.response.into_parts();
                let empty = Empty::new().map_err(|never| match never {}).boxed();
                return Response::from_parts(parts, empty);
            }
            return served.response;
        }
        let deny = |target: String, status: StatusCode, why: &str| {
            tracing::info!(
                sandbox_id = tag.sandbox_id,
                run_id = tag.run_id,
                target,
                why,
                "egress denied"
            );
            sink.record(ConnectionEvent {
                tag: tag.clone(),
                target,
                allowed: false,
                detail: Some(why.to_string()),
                bytes_up: 0,
                bytes_down: 0,
            });
            reply(status, why)
        };
        if request.method() != Method::CONNECT {
            let target = format!("{} {}", request.method(), request.uri());
            let why = if self.mirror.is_some() && is_mirror_path(request.uri().path()) {
                "the package mirror answers GET and HEAD only"
            } else {
                "only CONNECT tunnels to registries are allowed"
            };
            return deny(target, StatusCode::METHOD_NOT_ALLOWED, why);
        }
        let Some(authority) = request.uri().authority().cloned() else {
            return deny(
                request.uri().to_string(),
                StatusCode::BAD_REQUEST,
                "CONNECT needs host:port",
            );
        };
        let target = authority.to_string();
        let (Some(host), Some(port)) = (normalise_host(authority.host()), authority.port_u16())
        else {
            return deny(
                target,
                StatusCode::BAD_REQUEST,
                "CONNECT needs a host name and a port",
            );
        };
        if !self.allowlist.allows(&host, port) {
            return deny(
                target,
                StatusCode::FORBIDDEN,
                "destination is not an allowed registry",
            );
        }
        if let Some(upstream_proxy) = &self.upstream {
            return match connect_via(upstream_proxy, &target).await {
                Ok(stream) => self.tunnel(request, stream, tag, sink, target),
                Err(why) => deny(target, StatusCode::BAD_GATEWAY, &why),
            };
        }
        let addresses: Vec<SocketAddr> = match tokio::net::lookup_host((host.as_str(), port)).await
        {
            Ok(found) => found.collect(),
            Err(_) => return deny(target, StatusCode::BAD_GATEWAY, "name does not resolve"),
        };
        if addresses.is_empty() {
            return deny(target, StatusCode::BAD_GATEWAY, "name does not resolve");
        }
        if !self.allowlist.allow_private && addresses.iter().any(|a| is_internal(a.ip())) {
            return deny(
                target,
                StatusCode::FORBIDDEN,
                "name resolves to an internal address",
            );
        }
        let upstream =
            match tokio::time::timeout(CONNECT_TIMEOUT, TcpStream::connect(&addresses[..])).await {
                Ok(Ok(stream)) => stream,
                _ => return deny(target, StatusCode::BAD_GATEWAY, "registry unreachable"),
            };
        self.tunnel(request, upstream, tag, sink, target)
    }

    /// Answers 200 and splices the client's upgraded connection to `upstream`, counting bytes.
    fn tunnel(
        &self,
        request: Request<Incoming>,
        upstream: TcpStream,
        tag: ProxyTag,
        sink: Arc<dyn AuditSink>,
        target: String,
    ) -> Response<ProxyBody> {
        tracing::info!(
            sandbox_id = tag.sandbox_id,
            run_id = tag.run_id,
            target,
            "egress allowed"
        );
        tokio::spawn(async move {
            let (mut up, mut down, mut detail) = (0, 0, None);
            match hyper::upgrade::on(request).await {
                Ok(upgraded) => {
                    let mut client = TokioIo::new(upgraded);
                    let mut upstream = upstream;
                    match tokio::io::copy_bidirectional(&mut client, &mut upstream).await {
                        Ok((sent, received)) => (up, down) = (sent, received),
                        Err(e) => detail = Some(format!("tunnel closed: {e}")),
                    }
                }
                Err(e) => detail = Some(format!("upgrade failed: {e}")),
            }
            sink.record(ConnectionEvent {
                tag,
                target,
                allowed: true,
                detail,
                bytes_up: up,
                bytes_down: down,
            });
        });
        reply(StatusCode::OK, "")
    }
}

/// Opens a tunnel to `target` through the HTTP proxy at `proxy`.
async fn connect_via(proxy: &str, target: &str) -> Result<TcpStream, String> {
    use tokio::io::{AsyncReadExt, AsyncWriteExt};
    let mut stream = tokio::time::timeout(CONNECT_TIMEOUT, TcpStream::connect(proxy))
        .await
        .map_err(|_| "upstream proxy timed out".to_string())?
        .map_err(|e| format!("upstream proxy unreachable: {e}"))?;
    let request = format!("CONNECT {target} HTTP/1.1\r\nHost: {target}\r\n\r\n");
    stream
        .write_all(request.as_bytes())
        .await
        .map_err(|e| e.to_string())?;
    // Read the response head byte by byte: nothing of the tunnel may be consumed here.
    let mut head = Vec::new();
    let mut byte = [0u8; 1];
    while !head.ends_with(b"\r\n\r\n") {
        if head.len() > 8192 || stream.read(&mut byte).await.map_err(|e| e.to_string())? == 0 {
            return Err("upstream proxy closed the connection".into());
        }
        head.push(byte[0]);
    }
    let status_line = String::from_utf8_lossy(&head);
    match status_line.split_whitespace().nth(1) {
        Some("200") => Ok(stream),
        other => Err(format!(
            "upstream proxy refused the tunnel ({})",
            other.unwrap_or("no status")
        )),
    }
}

#[cfg(test)]
mod tests;
