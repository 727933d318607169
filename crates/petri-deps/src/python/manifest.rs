//! Names listed in `requirements.txt` and `pyproject.toml`. Only used to tell which imports
//! a manifest forgot; the installer reads the manifest itself, inside the sandbox.

/// The distribution name at the start of a requirement specifier (`requests[socks]>=2; ...`).
fn requirement_name(spec: &str) -> Option<String> {
    let spec = spec.trim();
    let end = spec
        .find(|c: char| !(c.is_ascii_alphanumeric() || matches!(c, '-' | '_' | '.')))
        .unwrap_or(spec.len());
    let name = &spec[..end];
    (!name.is_empty() && name.len() <= 200 && name.starts_with(|c: char| c.is_ascii_alphanumeric()))
        .then(|| name.to_string())
}

/// Requirement names of a `requirements.txt`: options (`-r`, `--index-url`), URLs, paths and
/// comments are skipped.
pub(crate) fn requirement_names(text: &str) -> Vec<String> {
    text.lines()
        .take(10_000)
        .map(|line| line.split(" #").next().unwrap_or("").trim())
        .filter(|line| {
            !line.is_empty() && !line.starts_with(['#', '-', '.', '/']) && !line.contains("://")
        })
        .filter_map(requirement_name)
        .collect()
}

/// `[project] dependencies = [...]` of a `pyproject.toml`, read leniently (a string list,
/// possibly over several lines). Anything else in the file is ignored.
pub(crate) fn pyproject_dependencies(text: &str) -> Vec<String> {
    let mut in_project = false;
    let mut collecting = false;
    let mut names = Vec::new();
    for line in text.lines().take(10_000) {
        let trimmed = line.trim();
        if trimmed.starts_with('[') && !collecting {
            in_project = trimmed == "[project]";
            continue;
        }
        if in_project && !collecting {
            if let Some(rest) = trimmed.strip_prefix("dependencies")
                && let Some(list) = rest.trim_start().strip_prefix('=')
            {
                collecting = !list.contains(']');
                names.extend(quoted_names(list));
            }
        } else if collecting {
            names.extend(quoted_names(trimmed));
            if trimmed.contains(']') {
                collecting = false;
            }
        }
    }
    names
}

fn quoted_names(fragment: &str) -> Vec<String> {
    fragment
        .split(['"', '\''])
        .skip(1)
        .step_by(2)
        .filter_map(requirement_name)
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn requirements_names_skip_options_urls_and_comments() {
        let text = "requests>=2.31 # http\n# comment\n-r other.txt\n--index-url https://x\nnumpy==1.26\n\
                    pandas[performance]; python_version>'3.8'\ngit+https://github.com/a/b\n./local\n  flask  \n";
        assert_eq!(
            requirement_names(text),
            ["requests", "numpy", "pandas", "flask"]
        );
    }

    #[test]
    fn pyproject_dependencies_single_and_multi_line() {
        let text = "[build-system]\nrequires = [\"setuptools\"]\n[project]\nname = \"demo\"\n\
                    dependencies = [\n  \"requests>=2\",\n  'PyYAML',\n]\n[tool.x]\ndependencies = [\"no\"]\n";
        assert_eq!(pyproject_dependencies(text), ["requests", "PyYAML"]);
        let one = "[project]\ndependencies = [\"httpx\", \"rich>=13\"]\n";
        assert_eq!(pyproject_dependencies(one), ["httpx", "rich"]);
    }

    proptest::proptest! {
        /// Arbitrary manifests never panic the parsers, and every name they return is a
        /// plausible distribution name.
        #[test]
        fn parsers_survive_arbitrary_input(text in "\\PC{0,400}") {
            for name in requirement_names(&text).into_iter().chain(pyproject_dependencies(&text)) {
                proptest::prop_assert!(name.bytes().all(|b| b.is_ascii_alphanumeric() || b"-_.".contains(&b)));
            }
        }
    }

    #[test]
    fn hostile_manifests_do_not_panic() {
        for text in [
            "[project]\ndependencies =",
            "\u{0}\u{ffff}",
            "dependencies = [\"",
            &"[".repeat(100_000),
        ] {
            let _ = pyproject_dependencies(text);
            let _ = requirement_names(text);
        }
    }
}
