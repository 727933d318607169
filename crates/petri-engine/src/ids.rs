//! Identifiers and timestamps. Ids are validated before they are ever joined into a path.

use chrono::{DateTime, SecondsFormat, Utc};

fn random_hex(bytes: usize) -> String {
    let mut buf = vec![0u8; bytes];
    getrandom::fill(&mut buf).expect("the OS random source is unavailable");
    buf.iter().map(|b| format!("{b:02x}")).collect()
}

/// `sb_` + 32 hex digits, as v0.11 minted them.
pub(crate) fn new_sandbox_id() -> String {
    format!("sb_{}", random_hex(16))
}

/// `run_` + 16 hex digits, as v0.11 minted them.
pub(crate) fn new_run_id() -> String {
    format!("run_{}", random_hex(8))
}

fn is_id(value: &str, prefix: &str, hex_len: usize) -> bool {
    value.strip_prefix(prefix).is_some_and(|hex| {
        hex.len() == hex_len && hex.bytes().all(|b| matches!(b, b'0'..=b'9' | b'a'..=b'f'))
    })
}

pub(crate) fn is_sandbox_id(value: &str) -> bool {
    is_id(value, "sb_", 32)
}

pub(crate) fn is_run_id(value: &str) -> bool {
    is_id(value, "run_", 16)
}

/// One timestamp format everywhere (RFC 3339, UTC, microseconds, `Z`), so that stored values
/// also sort and compare correctly as strings.
pub(crate) fn format_time(time: DateTime<Utc>) -> String {
    time.to_rfc3339_opts(SecondsFormat::Micros, true)
}

pub(crate) fn now() -> DateTime<Utc> {
    Utc::now()
}

pub(crate) fn parse_time(value: &str) -> Option<DateTime<Utc>> {
    DateTime::parse_from_rfc3339(value)
        .ok()
        .map(|t| t.with_timezone(&Utc))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ids_have_the_v0_11_shape_and_validate() {
        let sb = new_sandbox_id();
        assert!(is_sandbox_id(&sb), "{sb}");
        assert!(is_run_id(&new_run_id()));
        assert_ne!(new_sandbox_id(), sb);
        for bad in [
            "sb_",
            "sb_../../etc",
            "sb_ABCDEF0123456789abcdef0123456789",
            "run_x",
        ] {
            assert!(!is_sandbox_id(bad), "{bad}");
        }
    }

    #[test]
    fn timestamps_are_uniform_and_sortable() {
        let t = parse_time("2026-12-02T10:46:12.423569Z").unwrap();
        assert_eq!(format_time(t), "2026-12-02T10:46:12.423569Z");
        let later = format_time(t + chrono::Duration::milliseconds(1));
        assert!(later.as_str() > "2026-12-02T10:46:12.423569Z");
    }
}
