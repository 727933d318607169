//! Node: `package.json`, installed with `npm ci` when a lockfile pins the tree, else
//! `npm install`, into the project's own `node_modules` (where Node looks by itself).

mod imports;

use std::collections::BTreeSet;
use std::path::Path;

use crate::scan::{files_with_extension, is_file, read_file};
use crate::{DepPlan, DepsError, Toolbox, fingerprint, shell_quote};

/// Node's built-in modules (`require('module').builtinModules`, Node 20).
const BUILTINS: &[&str] = &[
    "assert",
    "async_hooks",
    "buffer",
    "child_process",
    "cluster",
    "console",
    "constants",
    "crypto",
    "dgram",
    "diagnostics_channel",
    "dns",
    "domain",
    "events",
    "fs",
    "http",
    "http2",
    "https",
    "inspector",
    "module",
    "net",
    "os",
    "path",
    "perf_hooks",
    "process",
    "punycode",
    "querystring",
    "readline",
    "repl",
    "stream",
    "string_decoder",
    "sys",
    "timers",
    "tls",
    "trace_events",
    "tty",
    "url",
    "util",
    "v8",
    "vm",
    "wasi",
    "worker_threads",
    "zlib",
    "test",
];

/// The package a module specifier names (`lodash/fp` -> `lodash`, `@scope/pkg/x` ->
/// `@scope/pkg`), or `None` for relative paths, built-ins and anything malformed.
fn package_of(specifier: &str) -> Option<String> {
    if specifier.starts_with(['.', '/'])
        || specifier.starts_with("node:")
        || specifier.contains("://")
    {
        return None;
    }
    let mut parts = specifier.split('/');
    let first = parts.next()?;
    let name = if first.starts_with('@') {
        format!("{first}/{}", parts.next()?)
    } else {
        first.to_string()
    };
    let valid = name.len() <= 214
        && name
            .bytes()
            .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b"-._@/~".contains(&b))
        && !BUILTINS.contains(&name.as_str());
    valid.then_some(name)
}

/// Packages named by `require('x')`, `import ... from 'x'`, `import 'x'` and `import('x')`.
pub(crate) fn imported_packages(source: &str) -> BTreeSet<String> {
    imports::module_specifiers(source)
        .iter()
        .filter_map(|specifier| package_of(specifier))
        .collect()
}

/// Third-party packages the workspace's JavaScript and TypeScript files import.
fn workspace_imports(workspace: &Path) -> BTreeSet<String> {
    let mut packages = BTreeSet::new();
    for extension in [".js", ".mjs", ".cjs", ".ts"] {
        for file in files_with_extension(workspace, extension) {
            if let Some(bytes) = read_file(workspace, file) {
                packages.extend(imported_packages(&String::from_utf8_lossy(&bytes)));
            }
        }
    }
    packages
}

fn npm_env(tools: &Toolbox) -> Vec<(String, String)> {
    let mut env = vec![
        (
            "npm_config_cache".into(),
            "/sandbox/.petri/cache/npm".into(),
        ),
        ("npm_config_update_notifier".into(), "false".into()),
    ];
    if let Some(registry) = &tools.npm_registry {
        env.push(("npm_config_registry".into(), registry.clone()));
        env.push(("NO_PROXY".into(), "127.0.0.1,localhost".into()));
        env.push(("no_proxy".into(), "127.0.0.1,localhost".into()));
    }
    env
}

/// Dependency names of a `package.json` (`dependencies`, then `devDependencies`). Hostile
/// input: anything that is not an object of string keys is ignored.
pub(crate) fn dependency_names(manifest: &serde_json::Value) -> Vec<String> {
    let mut names = Vec::new();
    for section in ["dependencies", "devDependencies"] {
        if let Some(deps) = manifest.get(section).and_then(|d| d.as_object()) {
            names.extend(deps.keys().take(10_000).filter(|k| k.len() <= 214).cloned());
        }
    }
    names
}

pub(crate) fn plan(workspace: &Path, tools: &Toolbox) -> Result<Option<DepPlan>, DepsError> {
    let imports = workspace_imports(workspace);
    if !is_file(workspace, "package.json") {
        // No manifest: install what the code imports, without writing one.
        if imports.is_empty() {
            return Ok(None);
        }
        let packages: Vec<String> = imports.into_iter().collect();
        let quoted: Vec<String> = packages.iter().map(|p| shell_quote(p)).collect();
        return Ok(Some(DepPlan {
            source: "imports".into(),
            command: format!(
                "cd /sandbox && npm install --no-save --no-audit --no-fund --loglevel=http {}",
                quoted.join(" ")
            ),
            env: npm_env(tools),
            fingerprint: fingerprint(&[b"npm-imports", packages.join("\n").as_bytes()]),
            packages,
            missing_imports: Vec::new(),
        }));
    }
    let manifest = read_file(workspace, "package.json").unwrap_or_default();
    let parsed: serde_json::Value = serde_json::from_slice(&manifest).unwrap_or_default();
    let packages = dependency_names(&parsed);
    let missing: Vec<String> = imports
        .into_iter()
        .filter(|p| !packages.contains(p))
        .collect();
    if packages.is_empty() && missing.is_empty() {
        return Ok(None);
    }
    let (lock, verb) = if is_file(workspace, "package-lock.json") {
        (
            read_file(workspace, "package-lock.json").unwrap_or_default(),
            "ci",
        )
    } else {
        (Vec::new(), "install")
    };
    let mut command = format!("cd /sandbox && npm {verb} --no-audit --no-fund --loglevel=http");
    if !missing.is_empty() {
        let quoted: Vec<String> = missing.iter().map(|p| shell_quote(p)).collect();
        // Unlisted imports are a best effort, and never written into the user's manifest.
        command.push_str(&format!(
            " && {{ npm install --no-save --no-audit --no-fund --loglevel=http {} || echo 'warning: could not install unlisted imports: {}'; }}",
            quoted.join(" "),
            missing.join(", ")
        ));
    }
    Ok(Some(DepPlan {
        source: if verb == "ci" {
            "package-lock.json"
        } else {
            "package.json"
        }
        .into(),
        packages,
        command,
        env: npm_env(tools),
        fingerprint: fingerprint(&[b"npm", &manifest, &lock, missing.join("\n").as_bytes()]),
        missing_imports: missing,
    }))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn lockfile_selects_npm_ci_and_changes_the_fingerprint() {
        let ws = tempfile::tempdir().unwrap();
        std::fs::write(
            ws.path().join("package.json"),
            r#"{"dependencies": {"is-number": "^7.0.0"}, "devDependencies": {"left-pad": "1"}}"#,
        )
        .unwrap();
        let plain = plan(ws.path(), &Toolbox::default()).unwrap().unwrap();
        assert_eq!(plain.packages, ["is-number", "left-pad"]);
        assert!(plain.command.contains("npm install"));
        std::fs::write(ws.path().join("package-lock.json"), "{}").unwrap();
        let locked = plan(ws.path(), &Toolbox::default()).unwrap().unwrap();
        assert!(locked.command.contains("npm ci"));
        assert_ne!(locked.fingerprint, plain.fingerprint);
    }

    #[test]
    fn imports_are_found_and_builtins_relative_and_scoped_handled() {
        let source = "const fs = require('fs');\nconst _ = require(\"lodash/fp\");\nimport x from './local.js';\n\
                      import { a } from '@scope/pkg/sub';\nimport 'side-effect';\nconst y = await import(`dyn`);\n\
                      import p from 'node:path';\nconst z = require('http://evil');\n";
        let found: Vec<String> = imported_packages(source).into_iter().collect();
        assert_eq!(found, ["@scope/pkg", "dyn", "lodash", "side-effect"]);
    }

    #[test]
    fn unlisted_imports_are_reported_and_installed_without_saving() {
        let ws = tempfile::tempdir().unwrap();
        std::fs::write(
            ws.path().join("package.json"),
            r#"{"dependencies": {"is-number": "7.0.0"}}"#,
        )
        .unwrap();
        std::fs::write(
            ws.path().join("index.js"),
            "require('is-number'); require('left-pad');",
        )
        .unwrap();
        let plan = plan(ws.path(), &Toolbox::default()).unwrap().unwrap();
        assert_eq!(plan.missing_imports, ["left-pad"]);
        assert!(
            plan.command.contains("npm install --no-save"),
            "{}",
            plan.command
        );
        std::fs::remove_file(ws.path().join("package.json")).unwrap();
        let scanned = plan_for(ws.path());
        assert_eq!(scanned.source, "imports");
        assert_eq!(scanned.packages, ["is-number", "left-pad"]);
    }

    fn plan_for(ws: &Path) -> DepPlan {
        plan(ws, &Toolbox::default()).unwrap().unwrap()
    }

    #[test]
    fn hostile_or_empty_manifests_plan_nothing() {
        let ws = tempfile::tempdir().unwrap();
        for text in [
            "",
            "[]",
            "{\"dependencies\": [1, 2]}",
            "{\"dependencies\": {}}",
            "{{{{",
        ] {
            std::fs::write(ws.path().join("package.json"), text).unwrap();
            assert_eq!(
                plan(ws.path(), &Toolbox::default()).unwrap(),
                None,
                "{text}"
            );
        }
    }
}
