//! Port preview: `/v1/sandboxes/{id}/ports/{port}/...` is proxied, as HTTP/1.1, to
//! `127.0.0.1:{port}` inside the sandbox's own network. The connection is made from within
//! that namespace (see `petri_sandbox::Backend::connect`), so nothing but the sandbox's
//! loopback is reachable this way, and the sandbox still cannot open any connection out.
//! Responses stream through as they come; `Upgrade` requests (WebSocket) become a byte pipe.

use axum::body::Body;
use axum::extract::{Path, Request, State};
use axum::http::header::{self, HeaderMap, HeaderName, HeaderValue};
use axum::http::{StatusCode, Uri};
use axum::response::{IntoResponse, Response};
use hyper_util::rt::TokioIo;

use crate::AppState;
use crate::error::ApiError;

/// Pages served on the API's origin (path-based previews) run with an opaque origin: a
/// sandboxed app must not script the API (or another sandbox's preview) from a browser.
const PREVIEW_CSP: &str =
    "sandbox allow-scripts allow-forms allow-popups allow-modals allow-downloads";

/// Headers of one hop only (RFC 9110 §7.6.1), never forwarded.
const HOP_BY_HOP: &[&str] = &[
    "connection",
    "keep-alive",
    "proxy-connection",
    "proxy-authenticate",
    "proxy-authorization",
    "te",
    "trailer",
    "transfer-encoding",
    "upgrade",
];

pub(crate) async fn proxy(
    State(state): State<AppState>,
    Path(params): Path<Vec<(String, String)>>,
    request: Request,
) -> Result<Response, ApiError> {
    let param = |name: &str| {
        params
            .iter()
            .find(|(key, _)| key == name)
            .map(|(_, value)| value.clone())
            .unwrap_or_default()
    };
    let (id, port_text) = (param("id"), param("port"));
    let port = parse_port(&port_text)?;
    let prefix = format!("/v1/sandboxes/{id}/ports/{port_text}");
    let target = target_uri(request.uri(), &prefix, &param("path"))?;
    forward(&state, &id, port, request, target, Some(&prefix)).await
}

/// Previews by host name (`PETRI_PREVIEW_HOST`): a request for
/// `{port}-{sandbox id}.{preview host}` goes to that port, path untouched. Each sandbox and
/// port is then an origin of its own in a browser: its cookies and storage are its own, so
/// pages need no opaque-origin policy. Other requests carry on to the API.
pub(crate) async fn by_host(
    State(state): State<AppState>,
    request: Request,
    next: axum::middleware::Next,
) -> Response {
    let Some(preview_host) = state.preview_host.as_deref() else {
        return next.run(request).await;
    };
    let Some((id, port)) = preview_target(request.headers(), preview_host) else {
        return next.run(request).await;
    };
    let target = match request.uri().path_and_query() {
        Some(target) => target
            .as_str()
            .parse()
            .unwrap_or_else(|_| Uri::from_static("/")),
        None => Uri::from_static("/"),
    };
    match forward(&state, &id, port, request, target, None).await {
        Ok(response) => response,
        Err(error) => error.into_response(),
    }
}

/// The sandbox and port a preview host name names, e.g. `8080-sb_0123….preview.example.com`
/// or `8080-0123….localhost:8000` for preview host `localhost`.
fn preview_target(headers: &HeaderMap, preview_host: &str) -> Option<(String, u16)> {
    let host = headers.get(header::HOST)?.to_str().ok()?;
    let host = host.rsplit_once(':').map_or(host, |(name, port)| {
        if port.chars().all(|c| c.is_ascii_digit()) {
            name
        } else {
            host
        }
    });
    let label = host
        .to_ascii_lowercase()
        .strip_suffix(&format!(".{}", preview_host.to_ascii_lowercase()))?
        .to_string();
    let (port, id) = label.split_once('-')?;
    let port = port.parse::<u16>().ok().filter(|p| *p != 0)?;
    let hex = id.strip_prefix("sb_").unwrap_or(id);
    (hex.len() == 32 && hex.chars().all(|c| c.is_ascii_hexdigit()))
        .then(|| (format!("sb_{hex}"), port))
}

fn parse_port(text: &str) -> Result<u16, ApiError> {
    text.parse::<u16>().ok().filter(|p| *p != 0).ok_or_else(|| {
        ApiError::new(
            StatusCode::UNPROCESSABLE_ENTITY,
            "invalid_input",
            format!("invalid port: {text:?} is not between 1 and 65535"),
        )
    })
}

/// Sends `request` to `port` in the sandbox as `target`, and its answer back. `prefix` is
/// where a path-based preview lives (sent as `X-Forwarded-Prefix`; its pages get an opaque
/// origin, since they share the API's).
async fn forward(
    state: &AppState,
    id: &str,
    port: u16,
    mut request: Request,
    target: Uri,
    prefix: Option<&str>,
) -> Result<Response, ApiError> {
    let stream = state.engine.connect_port(id, port).await?;

    let upgrade = wants_upgrade(request.headers());
    let client_upgrade = upgrade.then(|| hyper::upgrade::on(&mut request));
    let (mut parts, body) = request.into_parts();
    let original_host = parts.headers.get(header::HOST).cloned();
    strip_hop_by_hop(&mut parts.headers, upgrade);
    let headers = &mut parts.headers;
    headers.insert(
        header::HOST,
        HeaderValue::from_str(&format!("localhost:{port}")).expect("a valid header value"),
    );
    if let Some(value) = prefix.and_then(|p| HeaderValue::from_str(p).ok()) {
        headers.insert(HeaderName::from_static("x-forwarded-prefix"), value);
    }
    if let Some(host) = original_host {
        headers.insert(HeaderName::from_static("x-forwarded-host"), host);
    }
    parts.uri = target;
    parts.version = axum::http::Version::HTTP_11;
    let upstream_request = Request::from_parts(parts, body);

    let (mut sender, connection) = hyper::client::conn::http1::handshake(TokioIo::new(stream))
        .await
        .map_err(|e| bad_gateway(id, port, &e))?;
    tokio::spawn(async move {
        if let Err(e) = connection.with_upgrades().await {
            tracing::debug!(error = %e, "port preview connection ended");
        }
    });
    let mut response = sender
        .send_request(upstream_request)
        .await
        .map_err(|e| bad_gateway(id, port, &e))?;

    if response.status() == StatusCode::SWITCHING_PROTOCOLS
        && let Some(client_upgrade) = client_upgrade
    {
        let upstream_upgrade = hyper::upgrade::on(&mut response);
        tokio::spawn(async move {
            let (Ok(client), Ok(upstream)) = tokio::join!(client_upgrade, upstream_upgrade) else {
                return;
            };
            let (mut client, mut upstream) = (TokioIo::new(client), TokioIo::new(upstream));
            let _ = tokio::io::copy_bidirectional(&mut client, &mut upstream).await;
        });
        let (parts, _) = response.into_parts();
        return Ok(Response::from_parts(parts, Body::empty()));
    }

    let (mut parts, body) = response.into_parts();
    strip_hop_by_hop(&mut parts.headers, false);
    if prefix.is_some() {
        parts.headers.append(
            header::CONTENT_SECURITY_POLICY,
            HeaderValue::from_static(PREVIEW_CSP),
        );
    }
    Ok(Response::from_parts(parts, Body::new(body)).into_response())
}

/// One GET over `stream` (a connection into a sandbox), for agents: the status line and up to
/// `limit` bytes of the body as text.
pub(crate) async fn fetch(
    stream: tokio::net::TcpStream,
    port: u16,
    path: &str,
    limit: usize,
) -> Result<String, String> {
    use http_body_util::BodyExt;
    let target = if path.starts_with('/') {
        path.to_string()
    } else {
        format!("/{path}")
    };
    let request = axum::http::Request::get(target)
        .header(header::HOST, format!("localhost:{port}"))
        .body(Body::empty())
        .map_err(|e| format!("invalid path {path:?}: {e}"))?;
    let (mut sender, connection) = hyper::client::conn::http1::handshake(TokioIo::new(stream))
        .await
        .map_err(|e| format!("port {port}: {e}"))?;
    tokio::spawn(connection);
    let response = sender
        .send_request(request)
        .await
        .map_err(|e| format!("port {port}: {e}"))?;
    let status = response.status();
    let mut body = response.into_body();
    let mut bytes = Vec::new();
    while bytes.len() < limit {
        match body.frame().await {
            Some(Ok(frame)) => {
                if let Some(data) = frame.data_ref() {
                    bytes.extend_from_slice(data);
                }
            }
            Some(Err(e)) => return Err(format!("port {port}: the body broke off: {e}")),
            None => break,
        }
    }
    bytes.truncate(limit);
    Ok(format!(
        "HTTP {status}\n{}",
        String::from_utf8_lossy(&bytes)
    ))
}

/// The path and query the sandboxed server sees: the request's, minus the preview prefix.
fn target_uri(uri: &Uri, prefix: &str, matched: &str) -> Result<Uri, ApiError> {
    // The raw path keeps the client's percent-encoding; the matched tail is a fallback for
    // prefixes the client spelled differently (encoded characters in the id).
    let rest = match uri.path().strip_prefix(prefix) {
        Some(rest) => rest.to_string(),
        None => format!("/{matched}"),
    };
    let rest = if rest.starts_with('/') {
        rest
    } else {
        format!("/{rest}")
    };
    let target = match uri.query() {
        Some(query) => format!("{rest}?{query}"),
        None => rest,
    };
    target.parse().map_err(|_| {
        ApiError::new(
            StatusCode::BAD_REQUEST,
            "invalid_path",
            "the preview path is not a valid request target",
        )
    })
}

/// A `Connection: upgrade` request naming a protocol (a WebSocket handshake).
fn wants_upgrade(headers: &HeaderMap) -> bool {
    let connection_says_upgrade = headers
        .get_all(header::CONNECTION)
        .iter()
        .filter_map(|v| v.to_str().ok())
        .flat_map(|v| v.split(','))
        .any(|token| token.trim().eq_ignore_ascii_case("upgrade"));
    connection_says_upgrade && headers.contains_key(header::UPGRADE)
}

/// Removes hop-by-hop headers and those the `Connection` header names; an upgrade keeps
/// `Connection: upgrade` and its `Upgrade`.
fn strip_hop_by_hop(headers: &mut HeaderMap, keep_upgrade: bool) {
    let named: Vec<String> = headers
        .get_all(header::CONNECTION)
        .iter()
        .filter_map(|v| v.to_str().ok())
        .flat_map(|v| v.split(','))
        .map(|token| token.trim().to_ascii_lowercase())
        .filter(|token| !token.is_empty())
        .collect();
    let upgrade = headers.get(header::UPGRADE).cloned();
    for name in HOP_BY_HOP.iter().copied().map(String::from).chain(named) {
        headers.remove(name.as_str());
    }
    if keep_upgrade && let Some(upgrade) = upgrade {
        headers.insert(header::CONNECTION, HeaderValue::from_static("upgrade"));
        headers.insert(header::UPGRADE, upgrade);
    }
}

fn bad_gateway(id: &str, port: u16, error: &hyper::Error) -> ApiError {
    ApiError::new(
        StatusCode::BAD_GATEWAY,
        "upstream_error",
        format!("the server on port {port} of sandbox {id} failed to answer: {error}"),
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_prefix_goes_and_the_query_stays() {
        let uri: Uri = "/v1/sandboxes/sb_1/ports/8000/a/b%20c?x=1&y=%2F"
            .parse()
            .unwrap();
        let target = target_uri(&uri, "/v1/sandboxes/sb_1/ports/8000", "a/b c").unwrap();
        assert_eq!(target.to_string(), "/a/b%20c?x=1&y=%2F");
        let root: Uri = "/v1/sandboxes/sb_1/ports/8000".parse().unwrap();
        assert_eq!(
            target_uri(&root, "/v1/sandboxes/sb_1/ports/8000", "")
                .unwrap()
                .to_string(),
            "/"
        );
    }

    #[test]
    fn hop_by_hop_headers_and_the_ones_connection_names_are_dropped() {
        let mut headers = HeaderMap::new();
        headers.insert(
            header::CONNECTION,
            HeaderValue::from_static("close, x-secret"),
        );
        headers.insert("x-secret", HeaderValue::from_static("1"));
        headers.insert(
            header::TRANSFER_ENCODING,
            HeaderValue::from_static("chunked"),
        );
        headers.insert(header::ACCEPT, HeaderValue::from_static("*/*"));
        strip_hop_by_hop(&mut headers, false);
        assert_eq!(headers.len(), 1);
        assert!(headers.contains_key(header::ACCEPT));
    }

    #[test]
    fn preview_host_names_name_a_sandbox_and_a_port() {
        let hex = "0123456789abcdef0123456789abcdef";
        let with_host = |host: &str| {
            let mut headers = HeaderMap::new();
            headers.insert(header::HOST, HeaderValue::from_str(host).unwrap());
            preview_target(&headers, "preview.example")
        };
        let want = Some((format!("sb_{hex}"), 8080));
        assert_eq!(with_host(&format!("8080-{hex}.preview.example")), want);
        assert_eq!(
            with_host(&format!("8080-sb_{hex}.Preview.Example:8000")),
            want
        );
        for refused in [
            format!("8080-{hex}.other.example"),
            format!("8080-{hex}.preview.example.evil"),
            format!("0-{hex}.preview.example"),
            format!("70000-{hex}.preview.example"),
            format!("8080-{hex}00.preview.example"),
            format!("a.8080-{hex}.preview.example"),
            "preview.example".to_string(),
            "127.0.0.1:8000".to_string(),
        ] {
            assert_eq!(with_host(&refused), None, "{refused}");
        }
    }

    #[test]
    fn a_websocket_handshake_keeps_its_upgrade() {
        let mut headers = HeaderMap::new();
        headers.insert(
            header::CONNECTION,
            HeaderValue::from_static("keep-alive, Upgrade"),
        );
        headers.insert(header::UPGRADE, HeaderValue::from_static("websocket"));
        assert!(wants_upgrade(&headers));
        strip_hop_by_hop(&mut headers, true);
        assert_eq!(headers[header::CONNECTION], "upgrade");
        assert_eq!(headers[header::UPGRADE], "websocket");
    }
}
