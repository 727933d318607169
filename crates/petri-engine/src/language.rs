//! The languages a sandbox can be created for.

use crate::EngineError;

/// Supported languages, in the order they are listed to clients.
pub const SUPPORTED_LANGUAGES: [&str; 4] = ["python", "node", "go", "java"];

/// Normalises and validates a requested language.
pub(crate) fn parse_language(raw: &str) -> Result<&'static str, EngineError> {
    let wanted = raw.trim().to_ascii_lowercase();
    SUPPORTED_LANGUAGES
        .iter()
        .find(|lang| **lang == wanted)
        .copied()
        .ok_or_else(|| EngineError::UnsupportedLanguage {
            language: raw.to_string(),
            supported: SUPPORTED_LANGUAGES.to_vec(),
        })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn accepts_supported_case_insensitively_and_lists_them_otherwise() {
        assert_eq!(parse_language("Python ").unwrap(), "python");
        let err = parse_language("rust").unwrap_err().to_string();
        assert_eq!(
            err,
            "unsupported language \"rust\"; supported: python, node, go, java"
        );
    }
}
