//! Text from outside (a label, a host name, a kernel string, a file name, a scenario's name, a
//! command line of a stored or imported run) as rtgauge shows it: control characters escaped, so
//! that nothing a file or a user wrote can move the cursor, clear the screen, set a terminal's
//! title, add a line of its own or reorder one (bidirectional overrides), on the terminal or in
//! a text export. A leaf: every stage shows outside text through here.

use std::borrow::Cow;

/// Whether `c` must not reach a terminal as it is: a control character (C0, DEL, C1) or an
/// invisible one that reorders or hides text (bidirectional overrides and isolates, zero-width
/// characters, line and paragraph separators, the byte order mark).
pub fn hidden(c: char) -> bool {
    c.is_control()
        || matches!(
            c,
            '\u{061c}' | '\u{180e}' | '\u{200b}'..='\u{200f}' | '\u{2028}'..='\u{202e}' | '\u{2060}'..='\u{206f}' | '\u{feff}'
                | '\u{fff9}'..='\u{fffb}'
        )
}

/// `s` with every character `escape` picks written out by `write`; borrowed when there is none.
fn escaped<'a>(s: &'a str, escape: impl Fn(char) -> bool, write: impl Fn(&mut String, char)) -> Cow<'a, str> {
    if !s.chars().any(&escape) {
        return Cow::Borrowed(s);
    }
    let mut o = String::with_capacity(s.len() + 8);
    for c in s.chars() {
        if escape(c) {
            write(&mut o, c);
        } else {
            o.push(c);
        }
    }
    Cow::Owned(o)
}

/// One escape as Rust writes it: `\x1b` for a control character, `\u{202e}` beyond.
pub fn escape_char(o: &mut String, c: char) {
    use std::fmt::Write;
    let _ = if (c as u32) < 0x100 { write!(o, "\\x{:02x}", c as u32) } else { write!(o, "\\u{{{:x}}}", c as u32) };
}

/// A value from outside (a label, a host name, a kernel string, a command line) as it is shown
/// on a terminal or in a text export: every control character — a line break or a tab
/// included — and every invisible formatting character written as an escape (`\x1b`,
/// `\u{202e}`), so what a file says cannot set the terminal's title, clear it, add a line of
/// its own or reorder what follows.
pub fn shown(s: &str) -> Cow<'_, str> {
    escaped(s, hidden, escape_char)
}

/// A whole text rtgauge composed (a summary, a table, an export) as written to a terminal:
/// as [`shown`], but its own line breaks and tabs kept.
pub fn shown_text(s: &str) -> Cow<'_, str> {
    escaped(s, |c| hidden(c) && c != '\n' && c != '\t', escape_char)
}

/// A JSON text as written to a terminal: the characters [`shown`] escapes that JSON leaves
/// as they are (DEL, C1, invisible formatting characters; JSON allows them only inside
/// strings) written as JSON's own escapes (`\u009b`), so the document means the same.
pub fn shown_json(s: &str) -> Cow<'_, str> {
    escaped(
        s,
        |c| hidden(c) && c != '\n' && c != '\t',
        |o, c| {
            use std::fmt::Write;
            let mut units = [0u16; 2];
            for u in c.encode_utf16(&mut units) {
                let _ = write!(o, "\\u{:04x}", u);
            }
        },
    )
}

/// Text as XML character data or an attribute value, for every XML export (JUnit, rteval): the
/// five markup characters as entities, and a control character XML 1.0 cannot hold (every C0
/// one but tab, line feed and carriage return) as a space.
pub fn xml_escape(text: &str) -> String {
    text.chars()
        .map(|c| match c {
            '&' => "&amp;".into(),
            '<' => "&lt;".into(),
            '>' => "&gt;".into(),
            '"' => "&quot;".into(),
            '\'' => "&apos;".into(),
            c if (c as u32) < 0x20 && !matches!(c, '\n' | '\t' | '\r') => " ".into(),
            c => c.to_string(),
        })
        .collect()
}

/// `text` as one word of a shell's command line: as it is when it is plain, else in single
/// quotes (a quote inside written '\''). A command rtgauge prints for a person to paste is
/// written with it, at the end of its sentence, never inside quotes of its own.
pub fn shell_word(text: &str) -> String {
    if !text.is_empty() && text.chars().all(|c| c.is_ascii_alphanumeric() || "-_./:@%+=,".contains(c)) {
        return text.to_string();
    }
    format!("'{}'", text.replace('\'', "'\\''"))
}

/// A command line of `words`, each a shell word ([`shell_word`]): pastable as printed.
pub fn command(words: &[&str]) -> String {
    words.iter().map(|w| shell_word(w)).collect::<Vec<_>>().join(" ")
}

#[cfg(test)]
mod tests {
    use super::{shown, shown_json, shown_text, xml_escape};

    #[test]
    fn xml_escape_writes_entities_and_drops_what_xml_cannot_hold() {
        assert_eq!(xml_escape("<a b=\"c\" d='e'>&</a>"), "&lt;a b=&quot;c&quot; d=&apos;e&apos;&gt;&amp;&lt;/a&gt;");
        assert_eq!(xml_escape("x\x1by\tz\n\r µs"), "x y\tz\n\r µs");
    }

    #[test]
    fn control_and_reordering_characters_are_escaped_and_nothing_else() {
        assert_eq!(shown("board-a µs → ×2"), "board-a µs → ×2");
        assert_eq!(shown("a\x1b]0;x\x07\r\n\tb\u{9b}c\u{7f}"), "a\\x1b]0;x\\x07\\x0d\\x0a\\x09b\\x9bc\\x7f");
        assert_eq!(shown("abc\u{202e}fed"), "abc\\u{202e}fed");
        assert_eq!(shown_text("row\n\x1b[2J\trow\r"), "row\n\\x1b[2J\trow\\x0d");
        let json = shown_json("{\"a\": \"x\u{9b}\u{202e}\u{7f}\"}\n");
        assert_eq!(json, "{\"a\": \"x\\u009b\\u202e\\u007f\"}\n");
        assert_eq!(serde_json::from_str::<serde_json::Value>(&json).unwrap()["a"], "x\u{9b}\u{202e}\u{7f}");
    }
}
