//! The short text that stands for a failure in the `d1.failure` log field.

use core::fmt;

/// The most a single message contributes to a log line. D1 messages are about a hundred
/// bytes; what makes a message longer is echoed SQL or a stack trace, which logs do not need.
const MAX_MESSAGE_LEN: usize = 256;

/// Writes the first line of `text`, at most [`MAX_MESSAGE_LEN`] bytes (cut on a character
/// boundary, marked with `…`), and returns how many bytes of it were written.
///
/// Only an error of `out` itself is returned: a `Display` that fails by itself, or is
/// stopped at the end of its first line, still leaves a valid log line behind. Returning
/// its error instead would make `to_string()` and `format!` panic.
pub(super) fn write_first_line(
    text: &dyn fmt::Display,
    out: &mut fmt::Formatter<'_>,
) -> Result<usize, fmt::Error> {
    let mut line = FirstLine {
        out,
        written: 0,
        done: false,
        out_failed: false,
    };
    // The text's own failure and our early stop look alike here; `out_failed` tells them apart.
    let _ = fmt::write(&mut line, format_args!("{text}"));
    if line.out_failed {
        return Err(fmt::Error);
    }
    Ok(line.written)
}

struct FirstLine<'o, 'f> {
    out: &'o mut fmt::Formatter<'f>,
    written: usize,
    done: bool,
    out_failed: bool,
}

impl FirstLine<'_, '_> {
    fn forward(&mut self, text: &str) -> fmt::Result {
        self.out
            .write_str(text)
            .inspect_err(|_| self.out_failed = true)
    }
}

impl fmt::Write for FirstLine<'_, '_> {
    fn write_char(&mut self, c: char) -> fmt::Result {
        super::write_char(self, c)
    }

    fn write_str(&mut self, text: &str) -> fmt::Result {
        if self.done {
            return Err(fmt::Error);
        }
        let (line, line_ended) = match text.split_once(['\n', '\r']) {
            Some((line, _)) => (line, true),
            None => (text, false),
        };
        let room = MAX_MESSAGE_LEN.saturating_sub(self.written);
        let too_long = line.len() > room;
        let kept = if too_long {
            line.get(..line.floor_char_boundary(room))
                .unwrap_or_default()
        } else {
            line
        };
        self.forward(kept)?;
        self.written += kept.len();
        if too_long {
            self.forward("…")?;
        }
        if line_ended || too_long {
            self.done = true;
            return Err(fmt::Error);
        }
        Ok(())
    }
}
