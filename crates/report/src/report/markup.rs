//! HTML (and the SVG inside it) with escaping by construction: the one way rtgauge writes a
//! page, for the report and the dashboard alike.
//!
//! An [`Html`] is made only of markup written in rtgauge's source ([`Html::lit`], a
//! `&'static str`; the literal of [`crate::html!`]) and of values rendered through [`Render`]:
//! text from anywhere (a board's name, a label, a kernel string, a file's content) is escaped
//! (`&<>"'`, and control and invisible characters written as `\x1b`, as on a terminal), an
//! `Html` goes in as it is, a number as its digits. There is no way from a `String` to an
//! `Html` but escaping it (the SVG of the plots too: [`super::svg`] writes it through this
//! module).
//!
//! `html!("<td class=\"n\">{}</td>", value)` is `format!` for markup: its literal is markup,
//! each argument rendered. An argument must be given as one (`{}` or `{name}` with
//! `name = value`): a variable captured by its name inside the literal would bypass the
//! rendering, and `layers::html_is_written_through_markup` finds any.

use std::fmt::{self, Write};

/// Markup known to be safe: literal markup and rendered values (see the module doc).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Html(String);

impl Html {
    /// Empty markup.
    pub fn new() -> Html {
        Html(String::new())
    }

    /// Markup written in rtgauge's source (a `&'static str`, never a value from outside).
    pub fn lit(markup: &'static str) -> Html {
        Html(markup.to_string())
    }

    /// Text from anywhere, escaped.
    pub fn text(text: &str) -> Html {
        let mut h = Html::new();
        h.push(text);
        h
    }

    /// The markup of `format_args!` whose every argument is [`Rendered`] (see [`crate::html!`]).
    pub fn from_args(args: fmt::Arguments<'_>) -> Html {
        let mut s = String::new();
        let _ = s.write_fmt(args);
        Html(s)
    }

    /// Markup made by `format_args!` of [`Rendered`] arguments appended in place (what
    /// `page += html!(…)` does, without the temporary).
    pub fn push_args(&mut self, args: fmt::Arguments<'_>) {
        let _ = self.0.write_fmt(args);
    }

    /// `value` rendered at the end.
    pub fn push<R: Render + ?Sized>(&mut self, value: &R) {
        let _ = write!(self.0, "{}", Rendered(value));
    }

    /// The items, with the literal `separator` between them.
    pub fn join(items: impl IntoIterator<Item = Html>, separator: &'static str) -> Html {
        let mut h = Html::new();
        for (i, item) in items.into_iter().enumerate() {
            if i > 0 {
                h.0.push_str(separator);
            }
            h.0.push_str(&item.0);
        }
        h
    }

    /// This page with `inserted` right after its `<body…>` tag (at its start without one).
    pub fn with_after_body(&self, inserted: Html) -> Html {
        let page = &self.0;
        match page.find("<body").and_then(|at| page[at..].find('>').map(|end| at + end + 1)) {
            Some(at) => Html(format!("{}{}{}", &page[..at], inserted.0, &page[at..])),
            None => Html(format!("{}{page}", inserted.0)),
        }
    }

    pub fn as_str(&self) -> &str {
        &self.0
    }

    pub fn is_empty(&self) -> bool {
        self.0.is_empty()
    }

    pub fn into_string(self) -> String {
        self.0
    }
}

/// The markup, as it is (it is safe by construction).
impl fmt::Display for Html {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

/// Its markup, to read as text (`page.contains("<svg")`).
impl std::ops::Deref for Html {
    type Target = str;
    fn deref(&self) -> &str {
        &self.0
    }
}

impl From<Html> for String {
    fn from(h: Html) -> String {
        h.0
    }
}

/// Literal markup appended (`page += "<p>"`).
impl std::ops::AddAssign<&'static str> for Html {
    fn add_assign(&mut self, markup: &'static str) {
        self.0.push_str(markup);
    }
}

impl std::ops::AddAssign<Html> for Html {
    fn add_assign(&mut self, markup: Html) {
        self.0.push_str(&markup.0);
    }
}

impl std::ops::AddAssign<&Html> for Html {
    fn add_assign(&mut self, markup: &Html) {
        self.0.push_str(&markup.0);
    }
}

/// How a value goes into markup: text escaped, markup as it is, a number as its digits (with
/// the precision asked, `{:.1}`).
pub trait Render {
    fn render(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result;
}

impl Render for str {
    fn render(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        escape(self, f)
    }
}

impl Render for String {
    fn render(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        escape(self, f)
    }
}

impl Render for std::borrow::Cow<'_, str> {
    fn render(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        escape(self, f)
    }
}

impl Render for Html {
    fn render(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

impl<T: Render + ?Sized> Render for &T {
    fn render(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        (**self).render(f)
    }
}

/// A character, escaped as text.
impl Render for char {
    fn render(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let mut b = [0u8; 4];
        escape(self.encode_utf8(&mut b), f)
    }
}

/// A duration as rtgauge writes it (`45.6 µs`), as text.
impl Render for crate::vocab::units::Nanos {
    fn render(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        escape(&self.to_string(), f)
    }
}

/// A UUID, in its hyphenated form.
impl Render for uuid::Uuid {
    fn render(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        fmt::Display::fmt(self, f)
    }
}

/// A count with its noun (`3 runs`), as text.
impl Render for crate::vocab::Count<'_> {
    fn render(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        escape(&self.to_string(), f)
    }
}

/// Literal markup after this (`h + "</td></tr>"`).
impl std::ops::Add<&'static str> for Html {
    type Output = Html;
    fn add(mut self, markup: &'static str) -> Html {
        self.0.push_str(markup);
        self
    }
}

impl std::ops::Add<Html> for Html {
    type Output = Html;
    fn add(mut self, markup: Html) -> Html {
        self.0.push_str(&markup.0);
        self
    }
}

/// A value whose text is shown (`Nanos`, a count): its `Display`, escaped.
pub struct Shown<T: fmt::Display>(pub T);

impl<T: fmt::Display> Render for Shown<T> {
    fn render(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        escape(&self.0.to_string(), f)
    }
}

macro_rules! numbers {
    ($($t:ty),*) => {
        $(impl Render for $t {
            fn render(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                fmt::Display::fmt(self, f)
            }
        })*
    };
}
numbers!(u8, u16, u32, u64, usize, i8, i16, i32, i64, isize, f32, f64);

/// A value as an argument of [`crate::html!`]: rendered with its formatter's options.
pub struct Rendered<'a, T: Render + ?Sized>(pub &'a T);

impl<T: Render + ?Sized> fmt::Display for Rendered<'_, T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        self.0.render(f)
    }
}

/// A number in scientific notation (`{:.1e}`).
impl fmt::LowerExp for Rendered<'_, f64> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        fmt::LowerExp::fmt(self.0, f)
    }
}

/// Text for HTML, in text and in attributes alike: `&<>"'` as entities, control and invisible
/// reordering characters as text (`\x1b`), as on a terminal.
fn escape(s: &str, f: &mut fmt::Formatter<'_>) -> fmt::Result {
    // (most values are printable ASCII with nothing to escape: numbers, names, times)
    if s.bytes().all(|b| (0x20..0x7f).contains(&b) && !matches!(b, b'&' | b'<' | b'>' | b'"' | b'\'')) {
        return f.write_str(s);
    }
    let mut plain = 0;
    for (i, c) in s.char_indices() {
        let entity = match c {
            '&' => "&amp;",
            '<' => "&lt;",
            '>' => "&gt;",
            '"' => "&quot;",
            '\'' => "&#39;",
            c if crate::vocab::text::hidden(c) => {
                f.write_str(&s[plain..i])?;
                let mut e = String::new();
                crate::vocab::text::escape_char(&mut e, c);
                f.write_str(&e)?;
                plain = i + c.len_utf8();
                continue;
            }
            _ => continue,
        };
        f.write_str(&s[plain..i])?;
        f.write_str(entity)?;
        plain = i + c.len_utf8();
    }
    f.write_str(&s[plain..])
}

/// `format!` for markup: the literal is markup, each argument is rendered ([`Render`]: text
/// escaped, [`Html`] as it is, numbers as digits). Arguments all positional (`{}`) or all
/// named (`{id}` with `id = run.id`); a name captured from the scope is refused by
/// `layers::html_is_written_through_markup`.
#[macro_export]
macro_rules! html {
    ($markup:literal $(,)?) => {
        $crate::report::markup::Html::from_args(format_args!($markup))
    };
    ($markup:literal, $($name:ident = $value:expr),+ $(,)?) => {
        $crate::report::markup::Html::from_args(format_args!(
            $markup, $($name = $crate::report::markup::Rendered(&$value)),+
        ))
    };
    ($markup:literal, $($value:expr),+ $(,)?) => {
        $crate::report::markup::Html::from_args(format_args!(
            $markup, $($crate::report::markup::Rendered(&$value)),+
        ))
    };
}

/// [`crate::html!`] appended to `page` in place: `html_into!(page, "<td>{}</td>", v)` is
/// `page += html!("<td>{}</td>", v)` without the temporary (for pages of many fragments, as the
/// dashboard's plots of a thousand runs).
#[macro_export]
macro_rules! html_into {
    ($page:expr, $markup:literal $(,)?) => {
        $page.push_args(format_args!($markup))
    };
    ($page:expr, $markup:literal, $($name:ident = $value:expr),+ $(,)?) => {
        $page.push_args(format_args!($markup, $($name = $crate::report::markup::Rendered(&$value)),+))
    };
    ($page:expr, $markup:literal, $($value:expr),+ $(,)?) => {
        $page.push_args(format_args!($markup, $($crate::report::markup::Rendered(&$value)),+))
    };
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn text_is_escaped_markup_is_kept_and_numbers_keep_their_precision() {
        let board = "<script>alert('x')</script> & \u{1b}[2J";
        let cell = crate::html!("<td title=\"{}\">{}</td>", board, Html::lit("<b>ok</b>"));
        assert_eq!(cell.as_str(), "<td title=\"&lt;script&gt;alert(&#39;x&#39;)&lt;/script&gt; &amp; \\x1b[2J\"><b>ok</b></td>");
        let named = crate::html!("<a href=\"/run/{id}\">{v:.1} µs</a>", id = 42, v = 1.25f64);
        assert_eq!(named.as_str(), "<a href=\"/run/42\">1.2 µs</a>");
        let mut page = Html::lit("<p>");
        page += crate::html!("{}", "a<b");
        page += "</p>";
        assert_eq!(String::from(page), "<p>a&lt;b</p>");
        assert_eq!(Html::join([Html::text("x&y"), Html::lit("<br>")], " · ").as_str(), "x&amp;y · <br>");
        assert_eq!(crate::html!("{}", Shown(crate::vocab::units::Nanos(1500))).as_str(), "1.5 µs");
        let mut page = Html::lit("<p>");
        crate::html_into!(page, "{a}<b>{n}</b>", a = "a&b", n = 3);
        assert_eq!(page.as_str(), "<p>a&amp;b<b>3</b>");
    }
}
