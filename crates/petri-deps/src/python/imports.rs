//! Third-party top-level imports of a workspace's `.py` files, mapped to distributions.

use std::collections::BTreeSet;
use std::path::Path;

use crate::scan::{files_with_extension, read_file};

const STDLIB: &str = include_str!("stdlib.txt");

/// Import names whose distribution is named differently.
const DISTRIBUTIONS: &[(&str, &str)] = &[
    ("cv2", "opencv-python"),
    ("sklearn", "scikit-learn"),
    ("skimage", "scikit-image"),
    ("yaml", "PyYAML"),
    ("PIL", "Pillow"),
    ("bs4", "beautifulsoup4"),
    ("dateutil", "python-dateutil"),
    ("dotenv", "python-dotenv"),
    ("jwt", "PyJWT"),
    ("magic", "python-magic"),
    ("serial", "pyserial"),
    ("usb", "pyusb"),
    ("Crypto", "pycryptodome"),
    ("OpenSSL", "pyOpenSSL"),
    ("MySQLdb", "mysqlclient"),
    ("psycopg2", "psycopg2-binary"),
    ("google.protobuf", "protobuf"),
    ("attr", "attrs"),
    ("docx", "python-docx"),
    ("pptx", "python-pptx"),
    ("fitz", "PyMuPDF"),
    ("Levenshtein", "python-Levenshtein"),
    ("slugify", "python-slugify"),
    ("multipart", "python-multipart"),
    ("telegram", "python-telegram-bot"),
    ("discord", "discord.py"),
    ("sentence_transformers", "sentence-transformers"),
    ("websocket", "websocket-client"),
    ("lxml", "lxml"),
    ("zmq", "pyzmq"),
    ("git", "GitPython"),
    ("win32api", "pywin32"),
    ("gi", "PyGObject"),
    ("wx", "wxPython"),
    ("Bio", "biopython"),
    ("tensorflow_hub", "tensorflow-hub"),
];

/// The distribution that provides top-level module `module`.
pub(crate) fn distribution_for(module: &str) -> String {
    DISTRIBUTIONS
        .iter()
        .find(|(import, _)| *import == module)
        .map_or_else(|| module.to_string(), |(_, dist)| dist.to_string())
}

fn is_identifier(name: &str) -> bool {
    !name.is_empty()
        && name.len() <= 100
        && name.starts_with(|c: char| c.is_ascii_alphabetic() || c == '_')
        && name.chars().all(|c| c.is_ascii_alphanumeric() || c == '_')
}

/// Top-level modules named by `import a.b, c as d` and `from a.b import c` statements
/// (relative imports skipped). Line based: good enough for detection, and it never executes
/// or fully parses hostile source.
pub(crate) fn imported_modules(source: &str) -> BTreeSet<String> {
    let mut modules = BTreeSet::new();
    for line in source.lines().take(100_000) {
        let line = line.trim_start();
        if let Some(rest) = line.strip_prefix("import ") {
            for part in rest.split('#').next().unwrap_or("").split(',') {
                let name = part.split_whitespace().next().unwrap_or("");
                let top = name.split('.').next().unwrap_or("");
                if is_identifier(top) {
                    modules.insert(top.to_string());
                }
            }
        } else if let Some(rest) = line.strip_prefix("from ") {
            let name = rest.split_whitespace().next().unwrap_or("");
            if name.starts_with('.') {
                continue;
            }
            let top = name.split('.').next().unwrap_or("");
            if is_identifier(top) && rest.contains(" import") {
                modules.insert(top.to_string());
            }
        }
    }
    modules
}

/// Third-party modules imported anywhere in the workspace: standard library and the
/// workspace's own modules (any `.py` file or package directory of that name) excluded.
pub(crate) fn third_party_imports(workspace: &Path) -> BTreeSet<String> {
    let stdlib: BTreeSet<&str> = STDLIB.lines().filter(|l| !l.starts_with('#')).collect();
    let files = files_with_extension(workspace, ".py");
    let mut local: BTreeSet<String> = BTreeSet::new();
    for file in &files {
        for component in file.iter() {
            let name = component.to_string_lossy();
            local.insert(name.strip_suffix(".py").unwrap_or(&name).to_string());
        }
    }
    let mut imports = BTreeSet::new();
    for file in &files {
        if let Some(bytes) = read_file(workspace, file) {
            imports.extend(imported_modules(&String::from_utf8_lossy(&bytes)));
        }
    }
    imports
        .into_iter()
        .filter(|m| !stdlib.contains(m.as_str()) && !local.contains(m) && !m.starts_with('_'))
        .collect()
}
