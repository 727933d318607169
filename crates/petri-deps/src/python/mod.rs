//! Python: `pyproject.toml`, then `requirements.txt`, else the imports of the `.py` files.

mod imports;
mod manifest;

use std::collections::BTreeSet;
use std::path::Path;

use crate::scan::{is_file, read_file};
use crate::{DepPlan, DepsError, Installer, PYTHON_TARGET, Toolbox, fingerprint, shell_quote};

pub(crate) use imports::{distribution_for, third_party_imports};

/// PEP 503 normalisation: case-insensitive, runs of `-`, `_`, `.` are equal.
pub(crate) fn normalise(name: &str) -> String {
    let mut out = String::with_capacity(name.len());
    let mut last_sep = false;
    for ch in name.chars() {
        if matches!(ch, '-' | '_' | '.') {
            if !last_sep {
                out.push('-');
            }
            last_sep = true;
        } else {
            out.push(ch.to_ascii_lowercase());
            last_sep = false;
        }
    }
    out
}

fn installer(tools: &Toolbox) -> Installer {
    match &tools.uv {
        Some(uv) => Installer::Uv(uv.clone()),
        None => Installer::Pip,
    }
}

/// `install <args>` into a fresh target, swapped in only when complete, so a failed install
/// never leaves a half-updated package directory.
fn install_command(installer: &Installer, args: &str, missing: &[String]) -> String {
    let staged = format!("{PYTHON_TARGET}.new");
    let base = match installer {
        Installer::Uv(uv) => format!(
            "{} pip install --python /usr/bin/python3 --target {staged}",
            shell_quote(uv)
        ),
        Installer::Pip => format!(
            "/usr/bin/python3 -m pip install --disable-pip-version-check --no-input --no-warn-script-location --target {staged}"
        ),
    };
    let mut command = format!("rm -rf {staged} && {base} {args}");
    if !missing.is_empty() {
        let extras: Vec<String> = missing.iter().map(|m| shell_quote(m)).collect();
        // Imports the manifest forgot are a best effort: a guess that fails must not break a
        // project whose manifest is right.
        command.push_str(&format!(
            " && {{ {base} {} || echo 'warning: could not install unlisted imports: {}'; }}",
            extras.join(" "),
            missing.join(", ")
        ));
    }
    command.push_str(&format!(
        " && rm -rf {PYTHON_TARGET} && mv {staged} {PYTHON_TARGET}"
    ));
    command
}

fn env(installer: &Installer, tools: &Toolbox) -> Vec<(String, String)> {
    let mut env = vec![(
        "PIP_CACHE_DIR".to_string(),
        "/sandbox/.petri/cache/pip".to_string(),
    )];
    if let Some(index) = &tools.pypi_index {
        env.push(("UV_DEFAULT_INDEX".into(), index.clone()));
        env.push(("PIP_INDEX_URL".into(), index.clone()));
        env.push(("PIP_TRUSTED_HOST".into(), "127.0.0.1".into()));
        env.push(("NO_PROXY".into(), "127.0.0.1,localhost".into()));
        env.push(("no_proxy".into(), "127.0.0.1,localhost".into()));
    }
    if matches!(installer, Installer::Uv(_)) {
        env.push(("UV_CACHE_DIR".into(), "/sandbox/.petri/cache/uv".into()));
        env.push(("UV_NO_PROGRESS".into(), "1".into()));
    }
    env
}

pub(crate) fn plan(workspace: &Path, tools: &Toolbox) -> Result<Option<DepPlan>, DepsError> {
    let installer = installer(tools);
    let imports = third_party_imports(workspace);
    let (source, manifest, listed, args) = if is_file(workspace, "pyproject.toml") {
        let bytes = read_file(workspace, "pyproject.toml").unwrap_or_default();
        let listed = manifest::pyproject_dependencies(&String::from_utf8_lossy(&bytes));
        ("pyproject.toml", bytes, listed, "/sandbox".to_string())
    } else if is_file(workspace, "requirements.txt") {
        let bytes = read_file(workspace, "requirements.txt").unwrap_or_default();
        let listed = manifest::requirement_names(&String::from_utf8_lossy(&bytes));
        (
            "requirements.txt",
            bytes,
            listed,
            "-r /sandbox/requirements.txt".to_string(),
        )
    } else {
        if imports.is_empty() {
            return Ok(None);
        }
        let packages: Vec<String> = imports
            .iter()
            .map(|m| distribution_for(m))
            .collect::<BTreeSet<_>>()
            .into_iter()
            .collect();
        let quoted: Vec<String> = packages.iter().map(|p| shell_quote(p)).collect();
        let print = fingerprint(&[
            b"imports",
            packages.join("\n").as_bytes(),
            installer_key(&installer),
        ]);
        return Ok(Some(DepPlan {
            source: "imports".into(),
            command: install_command(&installer, &quoted.join(" "), &[]),
            env: env(&installer, tools),
            packages,
            missing_imports: Vec::new(),
            fingerprint: print,
        }));
    };
    let listed_normalised: BTreeSet<String> = listed.iter().map(|n| normalise(n)).collect();
    let missing: Vec<String> = imports
        .iter()
        .map(|module| distribution_for(module))
        .filter(|dist| !listed_normalised.contains(&normalise(dist)))
        .collect::<BTreeSet<_>>()
        .into_iter()
        .collect();
    let print = fingerprint(&[
        source.as_bytes(),
        &manifest,
        missing.join("\n").as_bytes(),
        installer_key(&installer),
    ]);
    Ok(Some(DepPlan {
        source: source.into(),
        command: install_command(&installer, &args, &missing),
        env: env(&installer, tools),
        packages: listed,
        missing_imports: missing,
        fingerprint: print,
    }))
}

fn installer_key(installer: &Installer) -> &'static [u8] {
    match installer {
        Installer::Uv(_) => b"uv",
        Installer::Pip => b"pip",
    }
}

#[cfg(test)]
mod tests;
