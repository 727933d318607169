//! Licences as packages declare them, turned into SPDX identifiers where the declaration is
//! one of the common spellings; anything else is kept as the package wrote it.

/// Lower-cased fragments of licence names, most specific first, and their SPDX identifiers.
const NAMES: &[(&[&str], &str)] = &[
    (&["apache", "2.0"], "Apache-2.0"),
    (&["apache", "2"], "Apache-2.0"),
    (&["mit"], "MIT"),
    (&["eclipse public license", "2.0"], "EPL-2.0"),
    (&["eclipse public license", "1.0"], "EPL-1.0"),
    (&["eclipse distribution license"], "BSD-3-Clause"),
    (&["mozilla public license", "2.0"], "MPL-2.0"),
    (&["bsd", "3-clause"], "BSD-3-Clause"),
    (&["new bsd"], "BSD-3-Clause"),
    (&["revised bsd"], "BSD-3-Clause"),
    (&["bsd", "2-clause"], "BSD-2-Clause"),
    (&["lesser general public license", "2.1"], "LGPL-2.1-only"),
    (
        &["gnu general public license", "version 2", "classpath"],
        "GPL-2.0-with-classpath-exception",
    ),
    (&["cddl", "1.1"], "CDDL-1.1"),
    (&["cddl", "1.0"], "CDDL-1.0"),
    (&["isc"], "ISC"),
];

/// The SPDX identifier for a declared licence name, or the name itself.
pub(crate) fn from_name(name: &str) -> Option<String> {
    let name = name.trim();
    if name.is_empty() || name.len() > 200 || name.chars().any(char::is_control) {
        return None;
    }
    let lower = name.to_ascii_lowercase();
    let words: Vec<&str> = lower
        .split(|c: char| !c.is_ascii_alphanumeric() && c != '.' && c != '-')
        .collect();
    let known = NAMES.iter().find(|(fragments, _)| {
        fragments.iter().all(|fragment| {
            // Short fragments must be whole words ("mit" is not "submit").
            if fragment.contains(' ') || fragment.len() > 4 {
                lower.contains(fragment)
            } else {
                words.contains(fragment)
            }
        })
    });
    Some(known.map_or_else(|| name.to_string(), |(_, id)| id.to_string()))
}

/// The SPDX identifier of a licence file's text, for the few licences that are almost always
/// used verbatim (Go modules declare their licence only this way).
pub(crate) fn from_text(text: &str) -> Option<&'static str> {
    let text: String = text
        .split_whitespace()
        .take(400)
        .collect::<Vec<_>>()
        .join(" ");
    let has = |needle: &str| text.contains(needle);
    if has("Apache License") && has("Version 2.0") {
        Some("Apache-2.0")
    } else if has("Permission is hereby granted, free of charge") {
        Some("MIT")
    } else if has("Mozilla Public License Version 2.0")
        || has("Mozilla Public License, version 2.0")
    {
        Some("MPL-2.0")
    } else if has("Permission to use, copy, modify, and/or distribute this software") {
        Some("ISC")
    } else if has("Redistribution and use in source and binary forms") {
        Some(
            if has("Neither the name") || has("names of its contributors") {
                "BSD-3-Clause"
            } else {
                "BSD-2-Clause"
            },
        )
    } else {
        None
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn common_pom_spellings_become_spdx_ids() {
        for (name, id) in [
            ("The Apache Software License, Version 2.0", "Apache-2.0"),
            ("Apache License, Version 2.0", "Apache-2.0"),
            ("Apache-2.0", "Apache-2.0"),
            ("MIT License", "MIT"),
            ("The MIT License", "MIT"),
            ("Eclipse Public License 1.0", "EPL-1.0"),
            ("Eclipse Public License - v 2.0", "EPL-2.0"),
            ("New BSD License", "BSD-3-Clause"),
            ("BSD 3-Clause", "BSD-3-Clause"),
            ("Submitted Software Licence", "Submitted Software Licence"),
        ] {
            assert_eq!(from_name(name).as_deref(), Some(id), "{name}");
        }
        assert_eq!(from_name("  "), None);
        assert_eq!(from_name("a\u{1b}[2Jb"), None);
    }

    #[test]
    fn licence_files_are_recognised_by_their_wording() {
        let mit = "MIT License\n\nCopyright (c) 2020 x\n\nPermission is hereby granted, free of charge, to any person";
        assert_eq!(from_text(mit), Some("MIT"));
        let bsd3 = "Redistribution and use in source and binary forms, with or without\nmodification... * Neither the name of Google Inc. nor";
        assert_eq!(from_text(bsd3), Some("BSD-3-Clause"));
        let apache = "                                 Apache License\n                           Version 2.0, January 2004";
        assert_eq!(from_text(apache), Some("Apache-2.0"));
        assert_eq!(from_text("All rights reserved."), None);
    }
}
