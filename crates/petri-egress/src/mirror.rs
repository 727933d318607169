//! A pull-through PyPI mirror served on the same in-sandbox listener as the CONNECT proxy.
//!
//! Installers point their index at `http://127.0.0.1:3128/pypi/simple`. Index pages are fetched
//! from PyPI by the server and their file links rewritten to the mirror; files are fetched by
//! the server, kept in a server-owned cache shared by every sandbox, and served from it. Only
//! the server writes the cache and only with bytes PyPI sent over TLS, for a path that PyPI
//! addresses by content, so one sandbox cannot alter what another installs, while the second
//! sandbox installing a package skips the download.

use std::path::PathBuf;

use bytes::Bytes;
use futures_util::TryStreamExt;
use http_body_util::{BodyExt, StreamBody};
use hyper::body::Frame;
use hyper::{Response, StatusCode};
use sha2::{Digest, Sha256};
use tokio::io::AsyncWriteExt;

use crate::proxy::{ProxyBody, reply};

/// Path prefix of the mirror on the proxy listener.
pub const MIRROR_PREFIX: &str = "/pypi/";
/// The index URL installers are given.
pub const MIRROR_INDEX: &str = "http://127.0.0.1:3128/pypi/simple";
const FILES_PREFIX: &str = "http://127.0.0.1:3128/pypi/files/";
const UPSTREAM_INDEX: &str = "https://pypi.org/simple/";
const UPSTREAM_FILES: &str = "https://files.pythonhosted.org/";
/// Largest index page and file the mirror handles.
const MAX_INDEX_BYTES: usize = 64 << 20;
const MAX_FILE_BYTES: u64 = 4 << 30;

/// What a mirror request did, for the audit log.
#[derive(Debug)]
pub(crate) struct Served {
    pub response: Response<ProxyBody>,
    pub detail: String,
    pub bytes: u64,
}

/// The mirror: an HTTPS client and the shared file cache.
#[derive(Debug, Clone)]
pub struct PypiMirror {
    client: reqwest::Client,
    cache: PathBuf,
}

/// Paths the mirror accepts after its prefix: PyPI's own character set, no `..`.
fn valid_path(path: &str) -> bool {
    !path.is_empty()
        && path.len() <= 1024
        && !path.split('/').any(|part| part == ".." || part == ".")
        && path
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || b"-_.~/+!%".contains(&b))
}

impl PypiMirror {
    /// A mirror caching files under `cache` (created if needed), reaching PyPI through the
    /// HTTP proxy `upstream` (`host:port`) when one is configured.
    pub fn new(cache: PathBuf, upstream: Option<&str>) -> Result<Self, std::io::Error> {
        std::fs::create_dir_all(&cache)?;
        let mut builder = reqwest::Client::builder()
            .user_agent(concat!(
                "petri/",
                env!("CARGO_PKG_VERSION"),
                " (pypi mirror)"
            ))
            .connect_timeout(std::time::Duration::from_secs(10));
        if let Some(upstream) = upstream {
            let url = format!("http://{}", upstream.trim_start_matches("http://"));
            builder = builder.proxy(reqwest::Proxy::all(url).map_err(std::io::Error::other)?);
        }
        let client = builder.build().map_err(std::io::Error::other)?;
        Ok(Self { client, cache })
    }

    pub(crate) async fn serve(&self, path: &str, accept: Option<&str>) -> Served {
        let rest = &path[MIRROR_PREFIX.len()..];
        if let Some(project) = rest.strip_prefix("simple/") {
            return self.index(project, accept).await;
        }
        if let Some(file) = rest.strip_prefix("files/") {
            return self.file(file).await;
        }
        refused(StatusCode::NOT_FOUND, "unknown mirror path")
    }

    async fn index(&self, project: &str, accept: Option<&str>) -> Served {
        if !project.is_empty() && !valid_path(project) {
            return refused(StatusCode::BAD_REQUEST, "invalid project path");
        }
        let mut request = self.client.get(format!("{UPSTREAM_INDEX}{project}"));
        if let Some(accept) = accept {
            request = request.header(reqwest::header::ACCEPT, accept);
        }
        let upstream = match request.send().await {
            Ok(upstream) => upstream,
            Err(e) => return refused(StatusCode::BAD_GATEWAY, &format!("index unreachable: {e}")),
        };
        let status =
            StatusCode::from_u16(upstream.status().as_u16()).unwrap_or(StatusCode::BAD_GATEWAY);
        let content_type = upstream
            .headers()
            .get(reqwest::header::CONTENT_TYPE)
            .and_then(|v| v.to_str().ok())
            .unwrap_or("text/html")
            .to_string();
        let body = match upstream.bytes().await {
            Ok(body) if body.len() <= MAX_INDEX_BYTES => body,
            _ => {
                return refused(
                    StatusCode::BAD_GATEWAY,
                    "index page unreadable or too large",
                );
            }
        };
        let rewritten = String::from_utf8_lossy(&body).replace(UPSTREAM_FILES, FILES_PREFIX);
        let bytes = rewritten.len() as u64;
        let mut response = Response::new(full(Bytes::from(rewritten)));
        *response.status_mut() = status;
        if let Ok(value) = content_type.parse() {
            response
                .headers_mut()
                .insert(hyper::header::CONTENT_TYPE, value);
        }
        Served {
            response,
            detail: format!("index {project}"),
            bytes,
        }
    }

    async fn file(&self, path: &str) -> Served {
        if !valid_path(path) {
            return refused(StatusCode::BAD_REQUEST, "invalid file path");
        }
        let digest: String = Sha256::digest(path.as_bytes())
            .iter()
            .map(|b| format!("{b:02x}"))
            .collect();
        let cached = self.cache.join(&digest);
        let hit = tokio::fs::metadata(&cached).await.is_ok();
        if !hit && let Err(detail) = self.download(path, &cached).await {
            return refused(StatusCode::BAD_GATEWAY, &detail);
        }
        let file = match tokio::fs::File::open(&cached).await {
            Ok(file) => file,
            Err(e) => return refused(StatusCode::BAD_GATEWAY, &format!("cache unreadable: {e}")),
        };
        let size = file.metadata().await.map(|m| m.len()).unwrap_or(0);
        let stream = tokio_util::io::ReaderStream::new(file).map_ok(Frame::data);
        let mut response = Response::new(BodyExt::boxed(StreamBody::new(stream)));
        response
            .headers_mut()
            .insert(hyper::header::CONTENT_LENGTH, size.into());
        Served {
            response,
            detail: format!(
                "file {path} ({})",
                if hit { "cache hit" } else { "downloaded" }
            ),
            bytes: size,
        }
    }

    /// Fetches a file from PyPI into the cache, atomically (a temp name, then a rename).
    async fn download(&self, path: &str, cached: &std::path::Path) -> Result<(), String> {
        let upstream = self
            .client
            .get(format!("{UPSTREAM_FILES}{path}"))
            .send()
            .await
            .map_err(|e| format!("file unreachable: {e}"))?;
        if !upstream.status().is_success() {
            return Err(format!("upstream answered {}", upstream.status()));
        }
        let temp = cached.with_extension(format!("part-{}", std::process::id()));
        let result = async {
            let mut out = tokio::fs::File::create(&temp)
                .await
                .map_err(|e| e.to_string())?;
            let mut written: u64 = 0;
            let mut body = upstream.bytes_stream();
            while let Some(chunk) = body.try_next().await.map_err(|e| e.to_string())? {
                written += chunk.len() as u64;
                if written > MAX_FILE_BYTES {
                    return Err("file larger than the mirror accepts".to_string());
                }
                out.write_all(&chunk).await.map_err(|e| e.to_string())?;
            }
            out.flush().await.map_err(|e| e.to_string())?;
            tokio::fs::rename(&temp, cached)
                .await
                .map_err(|e| e.to_string())
        }
        .await;
        if result.is_err() {
            let _ = tokio::fs::remove_file(&temp).await;
        }
        result
    }
}

fn full(bytes: Bytes) -> ProxyBody {
    http_body_util::Full::new(bytes)
        .map_err(|never| match never {})
        .boxed()
}

fn refused(status: StatusCode, why: &str) -> Served {
    Served {
        response: reply(status, why),
        detail: why.to_string(),
        bytes: 0,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_pypi_shaped_paths_are_accepted() {
        assert!(valid_path(
            "packages/f9/9b/abc/requests-2.32.3-py3-none-any.whl"
        ));
        assert!(valid_path("requests/"));
        for bad in [
            "",
            "../etc/passwd",
            "a/../../b",
            "a b",
            "a?x=1",
            "a#frag",
            "a\\b",
            "@evil.com/x",
        ] {
            assert!(!valid_path(bad), "{bad:?}");
        }
    }
}
