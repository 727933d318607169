//! Which dependencies a workspace needs and how to install them.
//!
//! Detection is manifest first (the user knows best), with an import scan as the fallback and
//! as a cross-check ("missing imports"). Every file read here comes from a sandbox: reads are
//! bounded in count, size and depth, and nothing is executed. A plan is a command that the
//! engine runs *inside* the sandbox with registry-only network; this crate never spawns
//! anything itself.
#![forbid(unsafe_code)]

mod go;
mod java;
mod node;
mod python;
mod sbom;
mod scan;

use std::path::Path;

pub use sbom::{Component, cyclonedx, installed_components};

use sha2::{Digest, Sha256};

/// Where installed dependencies and installer caches live inside the sandbox.
pub const DEPS_DIR: &str = "/sandbox/.petri";
/// Python packages are installed here (a `--target` directory on `PYTHONPATH`).
pub const PYTHON_TARGET: &str = "/sandbox/.petri/python";

/// Failures reading a workspace.
#[derive(Debug, thiserror::Error)]
pub enum DepsError {
    #[error("cannot read {path}: {source}")]
    Read {
        path: String,
        source: std::io::Error,
    },
}

/// The installer a plan uses.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Installer {
    /// `uv pip install` (path of the uv binary inside the sandbox).
    Uv(String),
    /// `python3 -m pip install`.
    Pip,
}

/// Tools available to installs.
#[derive(Debug, Clone, Default)]
pub struct Toolbox {
    /// Path of `uv` inside the sandbox, when the server provides it.
    pub uv: Option<String>,
    /// The server's PyPI mirror (shared, server-owned cache), when it runs one.
    pub pypi_index: Option<String>,
    /// The server's npm mirror, when it runs one.
    pub npm_registry: Option<String>,
    /// The server's Go module proxy mirror, when it runs one.
    pub go_proxy: Option<String>,
    /// The server's Maven repository mirror, when it runs one.
    pub maven_repository: Option<String>,
    /// Path of `gradle` inside the sandbox, when the server has one.
    pub gradle: Option<String>,
}

/// What to install for a workspace, and how.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DepPlan {
    /// `requirements.txt`, `pyproject.toml` or `imports`.
    pub source: String,
    /// Distributions named (for reporting; the manifest itself is authoritative).
    pub packages: Vec<String>,
    /// Third-party imports the manifest does not list (they are installed too).
    pub missing_imports: Vec<String>,
    /// Shell command run inside the sandbox.
    pub command: String,
    /// Environment of the install command.
    pub env: Vec<(String, String)>,
    /// Changes whenever what would be installed changes; equal fingerprints skip the install.
    pub fingerprint: String,
}

/// Environment every exec of a sandbox in `language` gets, so installed dependencies are
/// visible to any command (compound ones too) without the user setting anything.
/// `workspace` is the host path of the sandbox's workspace.
pub fn runtime_env(language: &str, workspace: &Path) -> Vec<(String, String)> {
    match language {
        "java" => java::runtime_env(workspace),
        "python" => vec![("PYTHONPATH".into(), PYTHON_TARGET.into())],
        "go" => go::runtime_env(),
        _ => Vec::new(),
    }
}

/// The test runner test mode uses when the request names none: the language's usual one,
/// chosen from the project's manifests. `None` when the project gives no way to tell.
pub fn default_test_command(language: &str, workspace: &Path) -> Option<String> {
    use crate::scan::{is_file, read_file};
    let command = match language {
        "python" => "python3 -m pytest -v",
        "node" => {
            let scripts = read_file(workspace, "package.json")
                .and_then(|bytes| serde_json::from_slice::<serde_json::Value>(&bytes).ok())
                .and_then(|manifest| manifest["scripts"]["test"].as_str().map(str::to_string));
            match scripts {
                Some(_) => "npm test",
                None => "node --test",
            }
        }
        "go" => "go test -v ./...",
        "java" if is_file(workspace, "pom.xml") => "mvn -B -o test",
        "java" if is_file(workspace, "build.gradle") => "gradle --offline test",
        _ => return None,
    };
    Some(command.to_string())
}

/// The install plan for `workspace` (a host path), or `None` when nothing needs installing.
pub fn plan(
    language: &str,
    workspace: &Path,
    tools: &Toolbox,
) -> Result<Option<DepPlan>, DepsError> {
    match language {
        "python" => python::plan(workspace, tools),
        "node" => node::plan(workspace, tools),
        "go" => go::plan(workspace, tools),
        "java" => java::plan(workspace, tools),
        _ => Ok(None),
    }
}

pub(crate) fn fingerprint(parts: &[&[u8]]) -> String {
    let mut hasher = Sha256::new();
    for part in parts {
        hasher.update((part.len() as u64).to_le_bytes());
        hasher.update(part);
    }
    hasher
        .finalize()
        .iter()
        .map(|b| format!("{b:02x}"))
        .collect()
}

/// Quotes a value for `sh -c`.
pub(crate) fn shell_quote(value: &str) -> String {
    format!("'{}'", value.replace('\'', "'\\''"))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn default_test_runners_follow_the_project() {
        let ws = tempfile::tempdir().unwrap();
        let runner = |language: &str| default_test_command(language, ws.path());
        assert_eq!(runner("python").as_deref(), Some("python3 -m pytest -v"));
        assert_eq!(runner("node").as_deref(), Some("node --test"));
        std::fs::write(
            ws.path().join("package.json"),
            r#"{"scripts": {"test": "jest"}}"#,
        )
        .unwrap();
        assert_eq!(runner("node").as_deref(), Some("npm test"));
        assert_eq!(runner("go").as_deref(), Some("go test -v ./..."));
        assert_eq!(
            runner("java"),
            None,
            "plain javac has no test runner to guess"
        );
        std::fs::write(ws.path().join("build.gradle"), "").unwrap();
        assert_eq!(runner("java").as_deref(), Some("gradle --offline test"));
        std::fs::write(ws.path().join("pom.xml"), "<project/>").unwrap();
        assert_eq!(runner("java").as_deref(), Some("mvn -B -o test"));
    }
}
