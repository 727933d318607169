//! Validation of client-supplied paths inside a workspace.

use crate::EngineError;

const MAX_PATH_BYTES: usize = 4096;
const MAX_COMPONENT_BYTES: usize = 255;
/// Deepest path a client may name; keeps every walk over client paths shallow.
const MAX_DEPTH: usize = 64;

/// A relative path that cannot leave the workspace: no `..`, not absolute, no NUL, no empty
/// name. It is only ever resolved component by component without following symlinks.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct RelPath {
    components: Vec<String>,
}

impl RelPath {
    pub fn parse(raw: &str) -> Result<Self, EngineError> {
        let invalid = |reason: &str| EngineError::InvalidPath {
            path: raw.to_string(),
            reason: reason.to_string(),
        };
        if raw.is_empty() {
            return Err(invalid("is empty"));
        }
        if raw.len() > MAX_PATH_BYTES {
            return Err(invalid("is longer than 4096 bytes"));
        }
        if raw.contains('\0') {
            return Err(invalid("contains a NUL byte"));
        }
        if raw.starts_with('/') {
            return Err(invalid(
                "is absolute; paths are relative to the sandbox workspace",
            ));
        }
        if raw.contains('\\') {
            return Err(invalid("contains a backslash"));
        }
        let mut components = Vec::new();
        for part in raw.split('/') {
            match part {
                "" | "." => continue,
                ".." => return Err(invalid("contains '..'")),
                _ if part.len() > MAX_COMPONENT_BYTES => {
                    return Err(invalid("has a name longer than 255 bytes"));
                }
                _ => components.push(part.to_string()),
            }
        }
        if components.is_empty() {
            return Err(invalid("names no file"));
        }
        if components.len() > MAX_DEPTH {
            return Err(invalid("is nested deeper than 64 directories"));
        }
        Ok(Self { components })
    }

    /// The path with the file name split off.
    pub fn split_last(&self) -> (&[String], &str) {
        let (last, parents) = self
            .components
            .split_last()
            .expect("a RelPath has at least one component");
        (parents, last)
    }

    pub fn components(&self) -> &[String] {
        &self.components
    }

    pub fn display(&self) -> String {
        self.components.join("/")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn accepts_nested_and_normalises() {
        let path = RelPath::parse("./src//app.py").unwrap();
        assert_eq!(path.display(), "src/app.py");
        assert_eq!(path.split_last(), (&["src".to_string()][..], "app.py"));
    }

    proptest::proptest! {
        /// Whatever a client sends, an accepted path stays inside the workspace.
        #[test]
        fn accepted_paths_never_escape(raw in "[a-z./\\\\\\x00 ]{0,40}") {
            if let Ok(path) = RelPath::parse(&raw) {
                proptest::prop_assert!(!path.components().is_empty());
                for part in path.components() {
                    proptest::prop_assert!(part != ".." && part != "." && !part.is_empty());
                    proptest::prop_assert!(!part.contains('/') && !part.contains('\\') && !part.contains('\0'));
                }
            }
        }
    }

    #[test]
    fn rejects_every_escape() {
        for bad in [
            "",
            "/etc/passwd",
            "../x",
            "a/../../x",
            "a/..",
            "..",
            "a\0b",
            "a\\..\\b",
            ".",
            "./",
            "//",
        ] {
            assert!(RelPath::parse(bad).is_err(), "{bad:?} must be rejected");
        }
        assert!(RelPath::parse(&"a".repeat(256)).is_err());
        assert!(RelPath::parse(&"a/".repeat(3000)).is_err());
        assert!(RelPath::parse(&"d/".repeat(65)).is_err());
        assert!(RelPath::parse(&"d/".repeat(64)).is_ok());
    }
}
