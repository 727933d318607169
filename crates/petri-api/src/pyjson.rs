//! JSON exactly as Python's `json.dumps` writes it by default (`", "` and `": "` separators,
//! non-ASCII escaped as `\uXXXX`). The v0.11 `done` event was produced that way and existing
//! clients match on substrings such as `"type": "output"`, so the bytes matter.

use std::io::{self, Write};

use serde::Serialize;
use serde_json::ser::{Formatter, Serializer};

#[derive(Debug)]
struct PythonFormatter;

impl Formatter for PythonFormatter {
    fn begin_array_value<W: ?Sized + Write>(
        &mut self,
        writer: &mut W,
        first: bool,
    ) -> io::Result<()> {
        if first {
            Ok(())
        } else {
            writer.write_all(b", ")
        }
    }

    fn begin_object_key<W: ?Sized + Write>(
        &mut self,
        writer: &mut W,
        first: bool,
    ) -> io::Result<()> {
        if first {
            Ok(())
        } else {
            writer.write_all(b", ")
        }
    }

    fn begin_object_value<W: ?Sized + Write>(&mut self, writer: &mut W) -> io::Result<()> {
        writer.write_all(b": ")
    }

    fn write_string_fragment<W: ?Sized + Write>(
        &mut self,
        writer: &mut W,
        fragment: &str,
    ) -> io::Result<()> {
        for ch in fragment.chars() {
            if ch.is_ascii() {
                writer.write_all(&[ch as u8])?;
            } else {
                let mut units = [0u16; 2];
                for unit in ch.encode_utf16(&mut units) {
                    write!(writer, "\\u{unit:04x}")?;
                }
            }
        }
        Ok(())
    }
}

/// Serialises `value` the way Python's `json.dumps(value)` would.
pub(crate) fn to_string(value: &impl Serialize) -> String {
    let mut out = Vec::new();
    let mut serializer = Serializer::with_formatter(&mut out, PythonFormatter);
    value
        .serialize(&mut serializer)
        .expect("serialising plain data into memory cannot fail");
    String::from_utf8(out).expect("the formatter writes ASCII only")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn matches_python_json_dumps_byte_for_byte() {
        #[derive(Serialize)]
        struct Done<'a> {
            exit_code: i32,
            duration_ms: u64,
            output: &'a str,
            error: Option<&'a str>,
        }
        let done = Done {
            exit_code: 1,
            duration_ms: 41,
            output: "héllo 😀\n\"q\"\t\u{1}",
            error: None,
        };
        // python3 -c 'import json; print(json.dumps({"exit_code": 1, "duration_ms": 41,
        //   "output": "héllo 😀\n\"q\"\t\x01", "error": None}))'
        assert_eq!(
            to_string(&done),
            r#"{"exit_code": 1, "duration_ms": 41, "output": "h\u00e9llo \ud83d\ude00\n\"q\"\t\u0001", "error": null}"#
        );
        assert_eq!(to_string(&[1, 2]), "[1, 2]");
    }
}
