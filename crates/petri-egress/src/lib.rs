//! Registry-only egress.
//!
//! Sandboxes that install dependencies get a listener on `127.0.0.1:3128` inside their own
//! network namespace (created by the isolation layer); this crate serves it from the host's
//! namespace as an HTTP `CONNECT` proxy that only tunnels to allowlisted registry hosts on
//! port 443. TLS is tunnelled, never terminated. The proxy resolves names itself, so a sandbox
//! has no DNS, and refuses names that resolve to loopback, private or link-local addresses.
//! Every connection attempt, allowed or not, is reported to an [`AuditSink`].
#![forbid(unsafe_code)]

mod allowlist;
mod mirror;
mod proxy;

pub use allowlist::{Allowlist, AllowlistError, DEFAULT_ALLOWLIST};
pub use mirror::{
    GO_MIRROR_PROXY, MAVEN_MIRROR_REPOSITORY, MirroredRegistries, NPM_MIRROR_REGISTRY,
    PYPI_MIRROR_INDEX, RegistryMirror,
};
pub use proxy::{AuditSink, ConnectionEvent, EgressProxy, ProxyTag};

/// Port of the proxy listener inside each sandbox's network namespace.
pub const PROXY_PORT: u16 = 3128;
