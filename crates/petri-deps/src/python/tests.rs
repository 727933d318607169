use std::fs;

use super::*;

fn workspace(files: &[(&str, &str)]) -> tempfile::TempDir {
    let dir = tempfile::tempdir().unwrap();
    for (path, content) in files {
        let path = dir.path().join(path);
        fs::create_dir_all(path.parent().unwrap()).unwrap();
        fs::write(path, content).unwrap();
    }
    dir
}

fn uv() -> Toolbox {
    Toolbox {
        uv: Some("/opt/petri/bin/uv".into()),
        pypi_index: Some("http://127.0.0.1:3128/pypi/simple".into()),
        ..Toolbox::default()
    }
}

#[test]
fn import_scan_maps_distributions_and_skips_stdlib_and_local_modules() {
    let ws = workspace(&[
        (
            "main.py",
            "import os, sys\nimport numpy as np\nfrom sklearn.linear_model import X\nimport cv2\nfrom . import sibling\nimport helpers\nfrom pkg.sub import y\n# import fake\nimport yaml  # config\n",
        ),
        ("helpers.py", "from PIL import Image\nimport bs4\n"),
        ("pkg/__init__.py", ""),
        ("pkg/sub.py", "import json"),
        (".venv/lib/x.py", "import should_not_be_seen"),
        ("node_modules/a.py", "import nope"),
    ]);
    let plan = plan(ws.path(), &uv()).unwrap().unwrap();
    assert_eq!(plan.source, "imports");
    assert_eq!(
        plan.packages,
        [
            "Pillow",
            "PyYAML",
            "beautifulsoup4",
            "numpy",
            "opencv-python",
            "scikit-learn"
        ]
    );
    assert!(
        plan.command.contains("--target /sandbox/.petri/python.new"),
        "{}",
        plan.command
    );
    assert!(plan.command.contains("'opencv-python'"));
    assert!(plan.env.contains(&(
        "UV_DEFAULT_INDEX".into(),
        "http://127.0.0.1:3128/pypi/simple".into()
    )));
}

#[test]
fn requirements_win_and_unlisted_imports_are_reported() {
    let ws = workspace(&[
        ("requirements.txt", "requests==2.32.3\nscikit-learn\n"),
        ("app.py", "import requests\nimport sklearn\nimport yaml\n"),
    ]);
    let plan = plan(ws.path(), &uv()).unwrap().unwrap();
    assert_eq!(plan.source, "requirements.txt");
    assert_eq!(plan.packages, ["requests", "scikit-learn"]);
    assert_eq!(plan.missing_imports, ["PyYAML"]);
    assert!(plan.command.contains("-r /sandbox/requirements.txt"));
    assert!(
        plan.command
            .contains("could not install unlisted imports: PyYAML")
    );
}

#[test]
fn pyproject_comes_first() {
    let ws = workspace(&[
        (
            "pyproject.toml",
            "[project]\nname = \"demo\"\ndependencies = [\"httpx\"]\n",
        ),
        ("requirements.txt", "flask\n"),
    ]);
    let plan = plan(ws.path(), &uv()).unwrap().unwrap();
    assert_eq!(plan.source, "pyproject.toml");
    assert_eq!(plan.packages, ["httpx"]);
    assert!(
        plan.command
            .contains("--target /sandbox/.petri/python.new /sandbox")
    );
}

#[test]
fn fingerprint_follows_the_manifest_and_the_installer() {
    let ws = workspace(&[("requirements.txt", "six\n")]);
    let first = plan(ws.path(), &uv()).unwrap().unwrap().fingerprint;
    assert_eq!(plan(ws.path(), &uv()).unwrap().unwrap().fingerprint, first);
    let pip = plan(ws.path(), &Toolbox::default()).unwrap().unwrap();
    assert_ne!(pip.fingerprint, first);
    assert!(
        pip.command
            .starts_with("rm -rf /sandbox/.petri/python.new && /usr/bin/python3 -m pip install")
    );
    fs::write(ws.path().join("requirements.txt"), "six==1.16.0\n").unwrap();
    assert_ne!(plan(ws.path(), &uv()).unwrap().unwrap().fingerprint, first);
}

#[test]
fn nothing_to_install_means_no_plan() {
    let ws = workspace(&[("main.py", "import json\nprint(1)\n")]);
    assert_eq!(plan(ws.path(), &uv()).unwrap(), None);
}

#[test]
fn planted_symlinks_are_not_followed() {
    let ws = workspace(&[]);
    std::os::unix::fs::symlink("/etc/passwd", ws.path().join("requirements.txt")).unwrap();
    std::os::unix::fs::symlink("/usr/lib/python3", ws.path().join("lib")).unwrap();
    assert_eq!(plan(ws.path(), &uv()).unwrap(), None);
}

#[test]
fn normalise_follows_pep_503() {
    assert_eq!(normalise("Foo.Bar__baz"), "foo-bar-baz");
}
