//! Which hosts a sandbox may reach. Host names come from sandboxed code: parsed strictly.

/// Registries reachable by default: PyPI, npm, the Go module proxy and checksum database,
/// Maven Central.
pub const DEFAULT_ALLOWLIST: &str = "pypi.org,files.pythonhosted.org,registry.npmjs.org,\
                                     proxy.golang.org,sum.golang.org,repo.maven.apache.org,repo1.maven.org";

/// A rejected allowlist entry.
#[derive(Debug, thiserror::Error)]
#[error("invalid egress allowlist entry {entry:?}: {reason}")]
pub struct AllowlistError {
    pub entry: String,
    pub reason: &'static str,
}

#[derive(Debug, Clone, PartialEq, Eq)]
enum Rule {
    /// `host` or `host:port`.
    Exact { host: String, port: u16 },
    /// `*.example.org[:port]`: subdomains only, not the apex.
    Suffix { suffix: String, port: u16 },
}

/// Allowed destinations.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Allowlist {
    rules: Vec<Rule>,
    /// Whether names resolving to private or loopback addresses may be reached (a mirror on
    /// the LAN); off by default.
    pub allow_private: bool,
}

/// Lowercases and checks a DNS name: letters, digits, `-` and `.`, no empty labels, no IP
/// literal (an IP cannot match a name rule, and must not pass as one).
pub(crate) fn normalise_host(raw: &str) -> Option<String> {
    let host = raw.trim_end_matches('.').to_ascii_lowercase();
    let valid = !host.is_empty()
        && host.len() <= 253
        && host.split('.').all(|label| {
            !label.is_empty()
                && label.len() <= 63
                && !label.starts_with('-')
                && !label.ends_with('-')
                && label
                    .bytes()
                    .all(|b| b.is_ascii_alphanumeric() || b == b'-')
        })
        && host.parse::<std::net::IpAddr>().is_err()
        && !host
            .split('.')
            .next_back()
            .is_some_and(|tld| tld.bytes().all(|b| b.is_ascii_digit()));
    valid.then_some(host)
}

impl Allowlist {
    /// Parses a comma-separated list of `host`, `host:port`, `*.suffix` or `*.suffix:port`
    /// (port 443 when omitted).
    pub fn parse(spec: &str) -> Result<Self, AllowlistError> {
        let mut rules = Vec::new();
        for entry in spec.split(',').map(str::trim).filter(|e| !e.is_empty()) {
            let err = |reason| AllowlistError {
                entry: entry.to_string(),
                reason,
            };
            let (name, port) = match entry.rsplit_once(':') {
                Some((name, port)) => (name, port.parse::<u16>().map_err(|_| err("bad port"))?),
                None => (entry, 443),
            };
            let rule = match name.strip_prefix("*.") {
                Some(suffix) => Rule::Suffix {
                    suffix: normalise_host(suffix).ok_or_else(|| err("not a host name"))?,
                    port,
                },
                None => Rule::Exact {
                    host: normalise_host(name).ok_or_else(|| err("not a host name"))?,
                    port,
                },
            };
            rules.push(rule);
        }
        Ok(Self {
            rules,
            allow_private: false,
        })
    }

    /// Whether `host:port` (as requested by a sandbox) may be reached.
    pub fn allows(&self, host: &str, port: u16) -> bool {
        let Some(host) = normalise_host(host) else {
            return false;
        };
        self.rules.iter().any(|rule| match rule {
            Rule::Exact { host: h, port: p } => *h == host && *p == port,
            Rule::Suffix { suffix, port: p } => {
                *p == port
                    && host.len() > suffix.len() + 1
                    && host.ends_with(suffix.as_str())
                    && host.as_bytes()[host.len() - suffix.len() - 1] == b'.'
            }
        })
    }

    /// The entries, for `/health`.
    pub fn entries(&self) -> Vec<String> {
        self.rules
            .iter()
            .map(|rule| match rule {
                Rule::Exact { host, port } => format!("{host}:{port}"),
                Rule::Suffix { suffix, port } => format!("*.{suffix}:{port}"),
            })
            .collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn default_list_allows_registries_only_on_443() {
        let list = Allowlist::parse(DEFAULT_ALLOWLIST).unwrap();
        assert!(list.allows("pypi.org", 443));
        assert!(list.allows("PyPI.org.", 443));
        assert!(list.allows("registry.npmjs.org", 443));
        assert!(!list.allows("pypi.org", 80));
        assert!(!list.allows("evil-pypi.org", 443));
        assert!(!list.allows("pypi.org.evil.com", 443));
        assert!(!list.allows("github.com", 443));
        assert!(!list.allows("169.254.169.254", 443));
    }

    #[test]
    fn suffix_rules_match_subdomains_not_lookalikes() {
        let list = Allowlist::parse("*.mirror.example:8443, files.example").unwrap();
        assert!(list.allows("a.mirror.example", 8443));
        assert!(!list.allows("mirror.example", 8443));
        assert!(!list.allows("amirror.example", 8443));
        assert!(!list.allows("a.mirror.example", 443));
        assert!(list.allows("files.example", 443));
    }

    proptest::proptest! {
        /// A normalised host is a plain DNS name: nothing that could smuggle a port, a path,
        /// credentials or an IP literal past a rule.
        #[test]
        fn normalised_hosts_are_plain_names(raw in "\\PC{0,40}") {
            if let Some(host) = normalise_host(&raw) {
                proptest::prop_assert!(host.bytes().all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'.' || b == b'-'));
                proptest::prop_assert!(host.parse::<std::net::IpAddr>().is_err());
            }
        }

        #[test]
        fn allowlist_matching_never_panics(host in "\\PC{0,60}", port: u16) {
            let list = Allowlist::parse(DEFAULT_ALLOWLIST).unwrap();
            let _ = list.allows(&host, port);
        }
    }

    #[test]
    fn hostile_names_are_rejected() {
        for bad in [
            "",
            "..",
            "a..b",
            "-a.com",
            "a_b.com",
            "1.2.3.4",
            "[::1]",
            "a b.com",
            "ex%61mple.com",
            "0x7f.1",
        ] {
            assert!(normalise_host(bad).is_none(), "{bad:?}");
        }
        assert!(Allowlist::parse("pypi.org:notaport").is_err());
        assert!(Allowlist::parse("http://pypi.org").is_err());
    }
}
