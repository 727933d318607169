//! Go: `go.mod` (else `go mod init` plus `go mod tidy` for loose `.go` files), with the module
//! and build caches kept per sandbox instead of thrown away after every exec.

use std::path::Path;

use crate::scan::{files_with_extension, is_file, read_file};
use crate::{DepPlan, DepsError, Toolbox, fingerprint};

const GO_HOME: &str = "/sandbox/.petri/go";

/// Module and build caches in the sandbox; `-modcacherw` keeps them removable.
fn cache_env() -> Vec<(String, String)> {
    vec![
        ("GOPATH".into(), GO_HOME.into()),
        ("GOMODCACHE".into(), format!("{GO_HOME}/mod")),
        ("GOCACHE".into(), format!("{GO_HOME}/build")),
        ("GOFLAGS".into(), "-modcacherw".into()),
        ("GOTOOLCHAIN".into(), "local".into()),
    ]
}

/// Environment of every Go exec: the persistent caches, and no module downloads (the
/// command has no network; failing fast beats a timeout).
pub(crate) fn runtime_env() -> Vec<(String, String)> {
    let mut env = cache_env();
    env.push(("GOPROXY".into(), "off".into()));
    env
}

pub(crate) fn plan(workspace: &Path, tools: &Toolbox) -> Result<Option<DepPlan>, DepsError> {
    let mut env = cache_env();
    // Only the module proxy (checksums are fetched through it too): no VCS fallback. The
    // server's mirror of it when there is one (a cache every sandbox shares).
    match &tools.go_proxy {
        Some(mirror) => {
            env.push(("GOPROXY".into(), mirror.clone()));
            env.push(("NO_PROXY".into(), "127.0.0.1,localhost".into()));
            env.push(("no_proxy".into(), "127.0.0.1,localhost".into()));
        }
        None => env.push(("GOPROXY".into(), "https://proxy.golang.org".into())),
    }
    if is_file(workspace, "go.mod") {
        let manifest = read_file(workspace, "go.mod").unwrap_or_default();
        let sums = read_file(workspace, "go.sum").unwrap_or_default();
        return Ok(Some(DepPlan {
            source: "go.mod".into(),
            packages: required_modules(&String::from_utf8_lossy(&manifest)),
            missing_imports: Vec::new(),
            command: "cd /sandbox && go mod tidy".into(),
            env,
            fingerprint: fingerprint(&[b"go", &manifest, &sums]),
        }));
    }
    if files_with_extension(workspace, ".go").is_empty() {
        return Ok(None);
    }
    Ok(Some(DepPlan {
        source: "go files".into(),
        packages: Vec::new(),
        missing_imports: Vec::new(),
        command: "cd /sandbox && go mod init sandbox && go mod tidy".into(),
        env,
        fingerprint: fingerprint(&[b"go-init"]),
    }))
}

/// Module paths in the `require` directives of a `go.mod`.
pub(crate) fn required_modules(text: &str) -> Vec<String> {
    let mut modules = Vec::new();
    let mut in_block = false;
    for line in text.lines().take(10_000) {
        let line = line.split("//").next().unwrap_or("").trim();
        if in_block {
            if line == ")" {
                in_block = false;
            } else if let Some(module) = line.split_whitespace().next() {
                modules.push(module.to_string());
            }
        } else if line == "require (" {
            in_block = true;
        } else if let Some(rest) = line.strip_prefix("require ") {
            modules.extend(rest.split_whitespace().next().map(str::to_string));
        }
    }
    modules
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn require_directives_single_and_block() {
        let text = "module demo\n\ngo 1.22\n\nrequire github.com/google/uuid v1.6.0\nrequire (\n\tgolang.org/x/text v0.14.0 // indirect\n\trsc.io/quote v1.5.2\n)\n";
        assert_eq!(
            required_modules(text),
            [
                "github.com/google/uuid",
                "golang.org/x/text",
                "rsc.io/quote"
            ]
        );
    }

    #[test]
    fn loose_go_files_get_a_module() {
        let ws = tempfile::tempdir().unwrap();
        assert_eq!(plan(ws.path(), &Toolbox::default()).unwrap(), None);
        std::fs::write(ws.path().join("main.go"), "package main\n").unwrap();
        let plan = plan(ws.path(), &Toolbox::default()).unwrap().unwrap();
        assert!(plan.command.contains("go mod init sandbox && go mod tidy"));
        assert!(
            plan.env
                .iter()
                .any(|(k, v)| k == "GOPROXY" && v == "https://proxy.golang.org")
        );
    }
}
