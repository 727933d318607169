//! Pull-through mirrors of PyPI and npm, served on the same in-sandbox listener as the
//! CONNECT proxy.
//!
//! Installers point at `http://127.0.0.1:3128/pypi/simple` or `http://127.0.0.1:3128/npm/`.
//! Metadata (index pages, packuments) is fetched from the registry by the server, briefly
//! reused, and its download links rewritten to the mirror; package files are fetched by the
//! server, kept in a server-owned cache shared by every sandbox, and served from it. Only the
//! server writes the cache, and only with bytes the registry sent over TLS for a path the
//! registry names (and the installers check the registry's hashes), so one sandbox cannot
//! alter what another installs, while the second sandbox installing a package skips the
//! download.

use std::collections::HashMap;
use std::path::PathBuf;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant, SystemTime};

use bytes::Bytes;
use futures_util::TryStreamExt;
use http_body_util::{BodyExt, StreamBody};
use hyper::body::Frame;
use hyper::{Response, StatusCode};
use sha2::{Digest, Sha256};
use tokio::io::AsyncWriteExt;

use crate::proxy::{ProxyBody, reply};

/// The index URL Python installers are given.
pub const PYPI_MIRROR_INDEX: &str = "http://127.0.0.1:3128/pypi/simple";
/// The registry URL npm is given.
pub const NPM_MIRROR_REGISTRY: &str = "http://127.0.0.1:3128/npm/";

/// A registry the mirror can stand in for.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Registry {
    Pypi,
    Npm,
}

impl Registry {
    /// Where metadata for `path` comes from.
    fn metadata_url(self, path: &str) -> String {
        match self {
            Registry::Pypi => format!("https://pypi.org/simple/{path}"),
            Registry::Npm => format!("https://registry.npmjs.org/{path}"),
        }
    }

    /// Where the package file `path` comes from.
    fn file_url(self, path: &str) -> String {
        match self {
            Registry::Pypi => format!("https://files.pythonhosted.org/{path}"),
            Registry::Npm => format!("https://registry.npmjs.org/{path}"),
        }
    }

    /// Download links in metadata, and what they become.
    fn rewrite(self) -> (&'static str, &'static str) {
        match self {
            Registry::Pypi => (
                "https://files.pythonhosted.org/",
                "http://127.0.0.1:3128/pypi/files/",
            ),
            Registry::Npm => ("https://registry.npmjs.org/", NPM_MIRROR_REGISTRY),
        }
    }

    fn name(self) -> &'static str {
        match self {
            Registry::Pypi => "pypi",
            Registry::Npm => "npm",
        }
    }
}

/// Whether `path` (of a plain HTTP request on the proxy listener) is for a mirror.
pub(crate) fn is_mirror_path(path: &str) -> bool {
    path.starts_with("/pypi/") || path.starts_with("/npm/")
}
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

/// How long an index page is reused: new releases show up within this delay.
const INDEX_TTL: Duration = Duration::from_secs(60);
/// Most index pages remembered at once.
const INDEX_ENTRIES: usize = 2_000;

/// An index page as fetched (already rewritten).
#[derive(Debug, Clone)]
struct CachedIndex {
    fetched: Instant,
    status: StatusCode,
    content_type: String,
    body: Bytes,
}

/// The mirror: an HTTPS client, recently fetched metadata, and the shared file cache.
#[derive(Debug, Clone)]
pub struct RegistryMirror {
    client: reqwest::Client,
    cache: PathBuf,
    pypi: bool,
    npm: bool,
    /// Files beyond this total are evicted, least recently used first.
    max_cache_bytes: u64,
    indexes: Arc<Mutex<HashMap<String, CachedIndex>>>,
}

/// Paths the mirror accepts after its prefix: PyPI's own character set, no `..`.
fn valid_path(path: &str) -> bool {
    !path.is_empty()
        && path.len() <= 1024
        && !path.split('/').any(|part| part == ".." || part == ".")
        && path
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || b"-_.~/+!%@".contains(&b))
}

impl RegistryMirror {
    /// A mirror caching files under `cache` (created if needed), reaching PyPI through the
    /// HTTP proxy `upstream` (`host:port`) when one is configured.
    /// Serves PyPI when `pypi`, npm when `npm` (each only if its hosts are allowed).
    pub fn new(
        cache: PathBuf,
        upstream: Option<&str>,
        max_cache_bytes: u64,
        pypi: bool,
        npm: bool,
    ) -> Result<Self, std::io::Error> {
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
        Ok(Self {
            client,
            cache,
            pypi,
            npm,
            max_cache_bytes,
            indexes: Arc::new(Mutex::new(HashMap::new())),
        })
    }

    /// Whether installers of PyPI packages should use the mirror.
    pub fn serves_pypi(&self) -> bool {
        self.pypi
    }

    /// Whether npm should use the mirror.
    pub fn serves_npm(&self) -> bool {
        self.npm
    }

    pub(crate) async fn serve(&self, path: &str, accept: Option<&str>) -> Served {
        if let Some(rest) = path.strip_prefix("/pypi/").filter(|_| self.pypi) {
            if let Some(project) = rest.strip_prefix("simple/") {
                return self.index(Registry::Pypi, project, accept).await;
            }
            if let Some(file) = rest.strip_prefix("files/") {
                return self.file(Registry::Pypi, file).await;
            }
        }
        if let Some(rest) = path.strip_prefix("/npm/").filter(|_| self.npm) {
            // Tarballs live at `<name>/-/<file>.tgz`; everything else is a packument.
            if rest.contains("/-/") && rest.ends_with(".tgz") {
                return self.file(Registry::Npm, rest).await;
            }
            return self.index(Registry::Npm, rest, accept).await;
        }
        refused(StatusCode::NOT_FOUND, "unknown mirror path")
    }

    async fn index(&self, registry: Registry, project: &str, accept: Option<&str>) -> Served {
        if !project.is_empty() && !valid_path(project) {
            return refused(StatusCode::BAD_REQUEST, "invalid project path");
        }
        let key = format!("{}\n{project}\n{}", registry.name(), accept.unwrap_or(""));
        if let Some(hit) = self.cached_index(&key) {
            return index_response(hit, format!("index {project} (cached)"));
        }
        let mut request = self.client.get(registry.metadata_url(project));
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
        let (from, to) = registry.rewrite();
        let rewritten = String::from_utf8_lossy(&body).replace(from, to);
        let entry = CachedIndex {
            fetched: Instant::now(),
            status,
            content_type,
            body: Bytes::from(rewritten),
        };
        if status.is_success() {
            self.remember_index(key, entry.clone());
        }
        index_response(entry, format!("index {project}"))
    }

    fn indexes(&self) -> std::sync::MutexGuard<'_, HashMap<String, CachedIndex>> {
        self.indexes.lock().unwrap_or_else(|p| p.into_inner())
    }

    fn cached_index(&self, key: &str) -> Option<CachedIndex> {
        self.indexes()
            .get(key)
            .filter(|entry| entry.fetched.elapsed() < INDEX_TTL)
            .cloned()
    }

    fn remember_index(&self, key: String, entry: CachedIndex) {
        let mut indexes = self.indexes();
        if indexes.len() >= INDEX_ENTRIES {
            indexes.retain(|_, e| e.fetched.elapsed() < INDEX_TTL);
            if indexes.len() >= INDEX_ENTRIES {
                indexes.clear();
            }
        }
        indexes.insert(key, entry);
    }

    /// Keeps the file cache under its size: least recently used files go first.
    fn evict(&self) {
        let Ok(entries) = std::fs::read_dir(&self.cache) else {
            return;
        };
        let mut files: Vec<(SystemTime, u64, PathBuf)> = entries
            .flatten()
            .filter_map(|e| {
                let meta = e.metadata().ok()?;
                if !meta.is_file() {
                    return None;
                }
                Some((meta.modified().ok()?, meta.len(), e.path()))
            })
            .collect();
        let mut total: u64 = files.iter().map(|(_, size, _)| size).sum();
        files.sort();
        for (_, size, path) in files {
            if total <= self.max_cache_bytes {
                break;
            }
            if std::fs::remove_file(&path).is_ok() {
                total -= size;
            }
        }
    }

    async fn file(&self, registry: Registry, path: &str) -> Served {
        if !valid_path(path) {
            return refused(StatusCode::BAD_REQUEST, "invalid file path");
        }
        let digest: String = Sha256::digest(format!("{}/{path}", registry.name()).as_bytes())
            .iter()
            .map(|b| format!("{b:02x}"))
            .collect();
        let cached = self.cache.join(&digest);
        let hit = tokio::fs::metadata(&cached).await.is_ok();
        if !hit {
            if let Err(detail) = self.download(&registry.file_url(path), &cached).await {
                return refused(StatusCode::BAD_GATEWAY, &detail);
            }
            let mirror = self.clone();
            tokio::task::spawn_blocking(move || mirror.evict());
        }
        let file = match tokio::fs::File::open(&cached).await {
            Ok(file) => file,
            Err(e) => return refused(StatusCode::BAD_GATEWAY, &format!("cache unreadable: {e}")),
        };
        let size = file.metadata().await.map(|m| m.len()).unwrap_or(0);
        // Recently used files survive eviction.
        if let Ok(std_file) = file.try_clone().await {
            let std_file = std_file.into_std().await;
            let _ = std_file.set_modified(SystemTime::now());
        }
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
    async fn download(&self, url: &str, cached: &std::path::Path) -> Result<(), String> {
        let upstream = self
            .client
            .get(url)
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

fn index_response(entry: CachedIndex, detail: String) -> Served {
    let bytes = entry.body.len() as u64;
    let mut response = Response::new(full(entry.body));
    *response.status_mut() = entry.status;
    if let Ok(value) = entry.content_type.parse() {
        response
            .headers_mut()
            .insert(hyper::header::CONTENT_TYPE, value);
    }
    Served {
        response,
        detail,
        bytes,
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
    fn eviction_keeps_the_most_recently_used_files_under_the_cap() {
        let dir = tempfile::tempdir().unwrap();
        let mirror = RegistryMirror::new(dir.path().to_path_buf(), None, 10, true, true).unwrap();
        for (name, age) in [("old", 300), ("mid", 200), ("new", 100)] {
            let path = dir.path().join(name);
            std::fs::write(&path, "12345").unwrap();
            let file = std::fs::File::options().write(true).open(&path).unwrap();
            file.set_modified(SystemTime::now() - Duration::from_secs(age))
                .unwrap();
        }
        mirror.evict();
        assert!(!dir.path().join("old").exists());
        assert!(dir.path().join("mid").exists() && dir.path().join("new").exists());
    }

    #[test]
    fn only_registry_shaped_paths_are_accepted() {
        assert!(valid_path("@scope%2fpkg"));
        assert!(valid_path("is-number/-/is-number-7.0.0.tgz"));
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
            "a:b",
        ] {
            assert!(!valid_path(bad), "{bad:?}");
        }
    }
}
