//! Which packages JavaScript and TypeScript sources import, found by a small tokenizer
//! rather than by searching lines: text inside comments, strings, template literals and
//! regular expressions is never mistaken for an import.

use std::collections::BTreeSet;

/// Longest source read (a sandbox decides what is in the workspace).
const MAX_SOURCE_CHARS: usize = 4 << 20;

#[derive(Debug, Clone, PartialEq, Eq)]
enum Token {
    Word(String),
    /// A string literal, or a template literal without substitutions.
    Text(String),
    /// A template literal with `${...}`: never a static module name.
    Template,
    Punct(char),
}

/// Splits `source` into words, string literals and punctuation; comments and regular
/// expression literals are dropped.
fn tokens(source: &str) -> Vec<Token> {
    let chars: Vec<char> = source.chars().take(MAX_SOURCE_CHARS).collect();
    let mut out: Vec<Token> = Vec::new();
    let mut i = 0;
    while i < chars.len() {
        let c = chars[i];
        let next = chars.get(i + 1).copied();
        if c.is_whitespace() {
            i += 1;
        } else if c == '/' && next == Some('/') {
            while i < chars.len() && chars[i] != '\n' {
                i += 1;
            }
        } else if c == '/' && next == Some('*') {
            i += 2;
            while i < chars.len() && !(chars[i] == '*' && chars.get(i + 1) == Some(&'/')) {
                i += 1;
            }
            i += 2;
        } else if c == '/' && starts_expression(out.last()) {
            i = skip_regex(&chars, i + 1);
        } else if matches!(c, '\'' | '"' | '`') {
            let (token, end) = literal(&chars, i);
            out.push(token);
            i = end;
        } else if c.is_alphanumeric() || c == '_' || c == '$' {
            let start = i;
            while i < chars.len()
                && (chars[i].is_alphanumeric() || chars[i] == '_' || chars[i] == '$')
            {
                i += 1;
            }
            out.push(Token::Word(chars[start..i].iter().collect()));
        } else {
            out.push(Token::Punct(c));
            i += 1;
        }
    }
    out
}

/// Whether a `/` after `previous` begins a regular expression rather than a division.
fn starts_expression(previous: Option<&Token>) -> bool {
    match previous {
        None => true,
        Some(Token::Punct(c)) => !matches!(c, ')' | ']' | '}'),
        Some(Token::Word(word)) => matches!(
            word.as_str(),
            "return"
                | "typeof"
                | "case"
                | "do"
                | "else"
                | "in"
                | "of"
                | "new"
                | "delete"
                | "void"
                | "throw"
                | "yield"
                | "await"
        ),
        Some(_) => false,
    }
}

/// The index just past a regular expression literal whose body starts at `i`.
fn skip_regex(chars: &[char], mut i: usize) -> usize {
    let mut in_class = false;
    while i < chars.len() && chars[i] != '\n' {
        match chars[i] {
            '\\' => i += 1,
            '[' => in_class = true,
            ']' => in_class = false,
            '/' if !in_class => return i + 1,
            _ => {}
        }
        i += 1;
    }
    i
}

/// The string or template literal starting at `start`, and the index just past it.
fn literal(chars: &[char], start: usize) -> (Token, usize) {
    let quote = chars[start];
    let mut text = String::new();
    let mut substituted = false;
    let mut i = start + 1;
    while i < chars.len() {
        match chars[i] {
            '\\' => {
                if let Some(escaped) = chars.get(i + 1) {
                    text.push(*escaped);
                }
                i += 2;
                continue;
            }
            c if c == quote => return (finish(text, substituted), i + 1),
            '\n' if quote != '`' => break,
            '$' if quote == '`' && chars.get(i + 1) == Some(&'{') => {
                substituted = true;
                i = skip_substitution(chars, i + 2);
                continue;
            }
            c => text.push(c),
        }
        i += 1;
    }
    (finish(text, substituted), i)
}

fn finish(text: String, substituted: bool) -> Token {
    if substituted {
        Token::Template
    } else {
        Token::Text(text)
    }
}

/// The index just past the `}` closing a `${` whose body starts at `i` (nesting counted,
/// strings inside skipped).
fn skip_substitution(chars: &[char], mut i: usize) -> usize {
    let mut depth = 1;
    while i < chars.len() {
        match chars[i] {
            '{' => depth += 1,
            '}' => {
                depth -= 1;
                if depth == 0 {
                    return i + 1;
                }
            }
            '\'' | '"' | '`' => {
                i = literal(chars, i).1;
                continue;
            }
            _ => {}
        }
        i += 1;
    }
    i
}

/// Module specifiers named by `require('x')`, `import ... from 'x'`, `export ... from 'x'`,
/// `import 'x'` and `import('x')`.
pub(crate) fn module_specifiers(source: &str) -> BTreeSet<String> {
    let tokens = tokens(source);
    let mut found = BTreeSet::new();
    let mut in_module_statement = false;
    let word = |i: usize| match tokens.get(i) {
        Some(Token::Word(w)) => Some(w.as_str()),
        _ => None,
    };
    let text = |i: usize| match tokens.get(i) {
        Some(Token::Text(t)) => Some(t.clone()),
        _ => None,
    };
    let punct = |i: usize, c: char| tokens.get(i) == Some(&Token::Punct(c));
    for i in 0..tokens.len() {
        let member = i > 0 && punct(i - 1, '.');
        match word(i) {
            Some("require") if !member && punct(i + 1, '(') && punct(i + 3, ')') => {
                found.extend(text(i + 2));
            }
            Some("import") if !member && punct(i + 1, '(') => found.extend(text(i + 2)),
            Some("import") if !member => match text(i + 1) {
                Some(specifier) => {
                    found.insert(specifier);
                }
                None => in_module_statement = true,
            },
            Some("export") if !member => in_module_statement = true,
            Some("from") if in_module_statement => {
                found.extend(text(i + 1));
                in_module_statement = false;
            }
            _ if punct(i, ';') => in_module_statement = false,
            _ => {}
        }
    }
    found
}

#[cfg(test)]
mod tests {
    use super::*;

    fn specifiers(source: &str) -> Vec<String> {
        module_specifiers(source).into_iter().collect()
    }

    #[test]
    fn every_import_form_is_found() {
        let source = "const fs = require('fs');\nconst _ = require(\"lodash/fp\");\nimport x from './local.js';\n\
                      import { a,\n  b } from '@scope/pkg/sub';\nimport 'side-effect';\nconst y = await import(`dyn`);\n\
                      export * from \"re-exported\";\nimport type { T } from 'typed'";
        assert_eq!(
            specifiers(source),
            [
                "./local.js",
                "@scope/pkg/sub",
                "dyn",
                "fs",
                "lodash/fp",
                "re-exported",
                "side-effect",
                "typed"
            ]
        );
    }

    #[test]
    fn words_in_comments_strings_templates_and_regexes_are_not_imports() {
        let source = r#"
            // import x from 'commented-line';
            /* const y = require('commented-block'); */
            const s = "import z from 'in-a-string'";
            const t = `require('in-a-template') ${ "from 'nested'" }`;
            const r = /from 'in-a-regex'/g;
            const half = a / b; const q = "from 'after-division'";
            obj.require('member-call');
            console.log(import.meta.url);
            const dynamic = require(`plugin-${name}`);
            const text = "I came from 'somewhere'";
        "#;
        assert!(specifiers(source).is_empty(), "{:?}", specifiers(source));
    }

    proptest::proptest! {
        #[test]
        fn arbitrary_text_never_panics(source in "\\PC{0,400}") {
            let _ = module_specifiers(&source);
        }

        #[test]
        fn unterminated_literals_and_comments_end_the_scan(prefix in "[a-z(=/*`'\"${} ]{0,60}") {
            let _ = module_specifiers(&format!("{prefix}require('x'"));
        }
    }
}
