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

/// The Go module proxy URL the `go` command is given.
pub const GO_MIRROR_PROXY: &str = "http://127.0.0.1:3128/go";
/// The repository URL Maven is given (as a mirror of everything).
pub const MAVEN_MIRROR_REPOSITORY: &str = "http://127.0.0.1:3128/maven2/";

/// Which registries the mirror stands in for (each only when its hosts are allowed).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct MirroredRegistries {
    pub pypi: bool,
    pub npm: bool,
    pub go: bool,
    pub maven: bool,
}

/// A registry the mirror can stand in for.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Registry {
    Pypi,
    Npm,
    Go,
    Maven,
}

impl Registry {
    /// The registry and the path within it that a mirror request names.
    fn route(path: &str) -> Option<(Registry, &str)> {
        [
            ("/pypi/", Registry::Pypi),
            ("/npm/", Registry::Npm),
            ("/go/", Registry::Go),
            ("/maven2/", Registry::Maven),
        ]
        .into_iter()
        .find_map(|(prefix, registry)| path.strip_prefix(prefix).map(|rest| (registry, rest)))
    }

    fn enabled(self, registries: MirroredRegistries) -> bool {
        match self {
            Registry::Pypi => registries.pypi,
            Registry::Npm => registries.npm,
            Registry::Go => registries.go,
            Registry::Maven => registries.maven,
        }
    }

    /// Whether `path` names immutable content (cached on disk) rather than metadata that
    /// changes (reused for a minute only).
    fn is_file(self, path: &str) -> bool {
        match self {
            Registry::Pypi => path.starts_with("files/"),
            // Tarballs live at `<name>/-/<file>.tgz`; everything else is a packument.
            Registry::Npm => path.contains("/-/") && path.ends_with(".tgz"),
            // Versioned module files never change; lists, `@latest` and checksum-database
            // lookups do.
            Registry::Go => {
                [".zip", ".mod", ".info"]
                    .iter()
                    .any(|ext| path.ends_with(ext))
                    && path.contains("/@v/")
            }
            Registry::Maven => !path
                .rsplit('/')
                .next()
                .unwrap_or("")
                .starts_with("maven-metadata"),
        }
    }

    /// Where `path` comes from.
    fn upstream_url(self, path: &str) -> String {
        match self {
            Registry::Pypi => match path.strip_prefix("files/") {
                Some(file) => format!("https://files.pythonhosted.org/{file}"),
                None => format!("https://pypi.org/{path}"),
            },
            Registry::Npm => format!("https://registry.npmjs.org/{path}"),
            Registry::Go => format!("https://proxy.golang.org/{path}"),
            Registry::Maven => format!("https://repo.maven.apache.org/maven2/{path}"),
        }
    }

    /// Download links in metadata, and what they become.
    fn rewrite(self) -> Option<(&'static str, &'static str)> {
        match self {
            Registry::Pypi => Some((
                "https://files.pythonhosted.org/",
                "http://127.0.0.1:3128/pypi/files/",
            )),
            Registry::Npm => Some(("https://registry.npmjs.org/", NPM_MIRROR_REGISTRY)),
            Registry::Go | Registry::Maven => None,
        }
    }

    fn name(self) -> &'static str {
        match self {
            Registry::Pypi => "pypi",
            Registry::Npm => "npm",
            Registry::Go => "go",
            Registry::Maven => "maven",
        }
    }
}

/// Whether `path` (of a plain HTTP request on the proxy listener) is for a mirror.
pub(crate) fn is_mirror_path(path: &str) -> bool {
    Registry::route(path).is_some()
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
    registries: MirroredRegistries,
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
    /// Stands in for `registries`, caching files under `cache`.
    pub fn new(
        cache: PathBuf,
        upstream: Option<&str>,
        max_cache_bytes: u64,
        registries: MirroredRegistries,
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
            registries,
            max_cache_bytes,
            indexes: Arc::new(Mutex::new(HashMap::new())),
        })
    }

    /// The registries this mirror stands in for.
    pub fn registries(&self) -> MirroredRegistries {
        self.registries
    }

    pub(crate) async fn serve(&self, path: &str, accept: Option<&str>) -> Served {
        let Some((registry, rest)) =
            Registry::route(path).filter(|(r, _)| r.enabled(self.registries))
        else {
            return refused(StatusCode::NOT_FOUND, "unknown mirror path");
        };
        if registry.is_file(rest) {
            self.file(registry, rest).await
        } else {
            self.index(registry, rest, accept).await
        }
    }

    async fn index(&self, registry: Registry, project: &str, accept: Option<&str>) -> Served {
        if !project.is_empty() && !valid_path(project) {
            return refused(StatusCode::BAD_REQUEST, "invalid project path");
        }
        let key = format!("{}\n{project}\n{}", registry.name(), accept.unwrap_or(""));
        if let Some(hit) = self.cached_index(&key) {
            return index_response(hit, format!("index {project} (cached)"));
        }
        let mut request = self.client.get(registry.upstream_url(project));
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
        let rewritten = match registry.rewrite() {
            Some((from, to)) => Bytes::from(String::from_utf8_lossy(&body).replace(from, to)),
            None => body,
        };
        let entry = CachedIndex {
            fetched: Instant::now(),
            status,
            content_type,
            body: rewritten,
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
            if let Err((status, detail)) =
                self.download(&registry.upstream_url(path), &cached).await
            {
                return refused(status, &detail);
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
    /// A missing file stays a 404 (installers probe for optional files and treat any other
    /// answer as a transfer failure worth retrying).
    async fn download(
        &self,
        url: &str,
        cached: &std::path::Path,
    ) -> Result<(), (StatusCode, String)> {
        let gateway = |detail: String| (StatusCode::BAD_GATEWAY, detail);
        let upstream = self
            .client
            .get(url)
            .send()
            .await
            .map_err(|e| gateway(format!("file unreachable: {e}")))?;
        let status = upstream.status();
        if status == reqwest::StatusCode::NOT_FOUND || status == reqwest::StatusCode::GONE {
            return Err((StatusCode::NOT_FOUND, "not found upstream".into()));
        }
        if !status.is_success() {
            return Err(gateway(format!("upstream answered {status}")));
        }
        // Unique per download: two requests for one file must not share a temporary file.
        static DOWNLOADS: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(0);
        let serial = DOWNLOADS.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        let temp = cached.with_extension(format!("part-{}-{serial}", std::process::id()));
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
        result.map_err(gateway)
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
        let mirror = RegistryMirror::new(
            dir.path().to_path_buf(),
            None,
            10,
            MirroredRegistries::default(),
        )
        .unwrap();
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
    fn routes_and_immutability() {
        let route =
            |p: &str| Registry::route(p).map(|(r, rest)| (r, rest.to_string(), r.is_file(rest)));
        assert_eq!(
            route("/pypi/simple/six/"),
            Some((Registry::Pypi, "simple/six/".into(), false))
        );
        assert_eq!(
            route("/pypi/files/packages/a/six.whl"),
            Some((Registry::Pypi, "files/packages/a/six.whl".into(), true))
        );
        assert_eq!(
            route("/npm/is-number"),
            Some((Registry::Npm, "is-number".into(), false))
        );
        assert!(route("/npm/is-number/-/is-number-7.0.0.tgz").unwrap().2);
        assert!(route("/go/github.com/google/uuid/@v/v1.6.0.zip").unwrap().2);
        assert!(!route("/go/github.com/google/uuid/@v/list").unwrap().2);
        assert!(!route("/go/sumdb/sum.golang.org/supported").unwrap().2);
        assert!(
            route("/maven2/junit/junit/4.13.2/junit-4.13.2.jar")
                .unwrap()
                .2
        );
        assert!(!route("/maven2/junit/junit/maven-metadata.xml").unwrap().2);
        assert_eq!(route("/other/x"), None);
        assert_eq!(
            Registry::Pypi.upstream_url("simple/six/"),
            "https://pypi.org/simple/six/"
        );
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
