//! Text from outside (a label, a host name, a kernel string, a file name, a scenario's name) as
//! rtgauge shows it: control characters escaped, so that nothing a file or a user wrote can move
//! the cursor, clear the screen, set a terminal's title or reorder a line (bidirectional
//! overrides) on the terminal or in a text export.

use std::borrow::Cow;

/// Whether `c` would act on a terminal or reorder text instead of being shown: C0 and C1
/// controls, DEL, and the bidirectional embedding, override and isolate characters.
fn acts(c: char) -> bool {
    c.is_control() || matches!(c, '\u{202a}'..='\u{202e}' | '\u{2066}'..='\u{2069}' | '\u{200e}' | '\u{200f}' | '\u{061c}')
}

/// `text` with every character that would act on a terminal escaped (`\x1b`, `\n`, `\u{202e}`);
/// borrowed as it is when there is none.
pub fn shown(text: &str) -> Cow<'_, str> {
    if !text.chars().any(acts) {
        return Cow::Borrowed(text);
    }
    let mut out = String::with_capacity(text.len() + 8);
    for c in text.chars() {
        match c {
            '\n' => out.push_str("\\n"),
            '\r' => out.push_str("\\r"),
            '\t' => out.push_str("\\t"),
            c if acts(c) && (c as u32) < 0x100 => out.push_str(&format!("\\x{:02x}", c as u32)),
            c if acts(c) => out.push_str(&format!("\\u{{{:x}}}", c as u32)),
            c => out.push(c),
        }
    }
    Cow::Owned(out)
}

#[cfg(test)]
mod tests {
    use super::shown;

    #[test]
    fn controls_are_escaped_and_plain_text_is_borrowed() {
        assert!(matches!(shown("board-7 µs"), std::borrow::Cow::Borrowed(_)));
        assert_eq!(shown("a\x1b]0;pwned\x07b"), "a\\x1b]0;pwned\\x07b");
        assert_eq!(shown("x\r\ny\u{9b}2J"), "x\\r\\ny\\x9b2J");
        assert_eq!(shown("evil\u{202e}txt"), "evil\\u{202e}txt");
    }
}
