//! Splits raw process output into lines the way Python's universal newlines do: `\n`, `\r\n`
//! and a lone `\r` (progress bars) all end a line, and each line is reported with a single
//! `\n`. Bytes that are not UTF-8 are replaced, and a line longer than the cap is cut into
//! pieces so a program that never prints a newline cannot grow server memory.

/// Incremental splitter; feed chunks, then call [`LineSplitter::finish`].
#[derive(Debug)]
pub(crate) struct LineSplitter {
    buffer: Vec<u8>,
    pending_cr: bool,
    max_line: usize,
}

impl LineSplitter {
    pub fn new(max_line: usize) -> Self {
        Self {
            buffer: Vec::new(),
            pending_cr: false,
            max_line,
        }
    }

    /// Appends a chunk; returns the lines it completed, each ending in `\n`.
    pub fn push(&mut self, chunk: &[u8]) -> Vec<String> {
        let mut lines = Vec::new();
        for &byte in chunk {
            if self.pending_cr {
                self.pending_cr = false;
                if byte == b'\n' {
                    continue; // The `\n` of a `\r\n` pair: its line is already out.
                }
            }
            match byte {
                b'\n' => lines.push(self.take_line()),
                b'\r' => {
                    lines.push(self.take_line());
                    self.pending_cr = true;
                }
                _ => {
                    self.buffer.push(byte);
                    if self.buffer.len() >= self.max_line {
                        lines.push(self.take_partial());
                    }
                }
            }
        }
        lines
    }

    /// The unterminated rest of the output, if any (without a trailing `\n`).
    pub fn finish(&mut self) -> Option<String> {
        (!self.buffer.is_empty())
            .then(|| String::from_utf8_lossy(&std::mem::take(&mut self.buffer)).into_owned())
    }

    fn take_line(&mut self) -> String {
        let mut line = String::from_utf8_lossy(&self.buffer).into_owned();
        self.buffer.clear();
        line.push('\n');
        line
    }

    /// Cuts an over-long line, keeping a multi-byte character that straddles the cut whole.
    fn take_partial(&mut self) -> String {
        let cut = match std::str::from_utf8(&self.buffer) {
            Err(e) if e.error_len().is_none() && e.valid_up_to() > 0 => e.valid_up_to(),
            _ => self.buffer.len(),
        };
        let rest = self.buffer.split_off(cut);
        let mut line = String::from_utf8_lossy(&self.buffer).into_owned();
        self.buffer = rest;
        line.push('\n');
        line
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn split(chunks: &[&[u8]]) -> Vec<String> {
        let mut splitter = LineSplitter::new(16);
        let mut lines: Vec<String> = chunks.iter().flat_map(|c| splitter.push(c)).collect();
        lines.extend(splitter.finish());
        lines
    }

    #[test]
    fn universal_newlines_across_chunks() {
        assert_eq!(
            split(&[b"a\nb\r", b"\nc\rd", b"\r\r\ne"]),
            ["a\n", "b\n", "c\n", "d\n", "\n", "e"]
        );
    }

    #[test]
    fn invalid_utf8_is_replaced_not_fatal() {
        assert_eq!(split(&[b"ok \xff\xfe\n"]), ["ok \u{fffd}\u{fffd}\n"]);
    }

    #[test]
    fn long_lines_are_cut_on_character_boundaries() {
        let text = "ééééééééééé\n".as_bytes(); // 22 bytes of two-byte characters
        let lines = split(&[text]);
        assert_eq!(lines.concat().replace('\n', ""), "ééééééééééé");
        assert!(lines.iter().all(|l| !l.contains('\u{fffd}')), "{lines:?}");
        assert!(lines.len() >= 2);
    }
}
