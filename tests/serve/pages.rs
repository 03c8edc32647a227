//! serve: pages (a part of tests/serve/main.rs, whose helpers it uses).

use super::*;

// ---------------------------------------------------------------------------------------------
// Pages: their tags' attributes, the links in them.
// ---------------------------------------------------------------------------------------------

/// One attribute of a tag of a page: the tag, the attribute's name, its value (character
/// references decoded) and where the tag starts in the page.
#[derive(Debug)]
pub(crate) struct Attr {
    pub(crate) tag: String,
    pub(crate) name: String,
    pub(crate) value: String,
    pub(crate) at: usize,
}

/// `s` with HTML's character references decoded (the named ones a page uses, and numeric ones).
pub(crate) fn unescape(s: &str) -> String {
    let mut o = String::with_capacity(s.len());
    let mut rest = s;
    while let Some(i) = rest.find('&') {
        o.push_str(&rest[..i]);
        rest = &rest[i..];
        let end = rest.find(';').filter(|&e| e <= 10);
        let decoded = end.and_then(|e| {
            let name = &rest[1..e];
            let c = match name {
                "amp" => Some('&'),
                "lt" => Some('<'),
                "gt" => Some('>'),
                "quot" => Some('"'),
                "apos" => Some('\''),
                "nbsp" => Some('\u{a0}'),
                _ => name
                    .strip_prefix("#x")
                    .or_else(|| name.strip_prefix("#X"))
                    .map(|h| u32::from_str_radix(h, 16).ok())
                    .unwrap_or_else(|| name.strip_prefix('#').and_then(|d| d.parse().ok()))
                    .and_then(char::from_u32),
            };
            c.map(|c| (c, e))
        });
        match decoded {
            Some((c, e)) => {
                o.push(c);
                rest = &rest[e + 1..];
            }
            None => {
                o.push('&');
                rest = &rest[1..];
            }
        }
    }
    o.push_str(rest);
    o
}

/// The attributes of every tag of `html` (text, comments and the insides of script and style
/// elements skipped: escaped text never starts a tag), and the text of its style elements.
pub(crate) fn attributes(html: &str) -> (Vec<Attr>, Vec<String>) {
    let b = html.as_bytes();
    let (mut attrs, mut styles) = (Vec::new(), Vec::new());
    let mut i = 0;
    let ws = |c: u8| c.is_ascii_whitespace();
    while let Some(off) = html[i..].find('<') {
        let start = i + off;
        i = start + 1;
        if html[i..].starts_with("!--") {
            i = html[i..].find("-->").map_or(b.len(), |e| i + e + 3);
            continue;
        }
        if html[i..].starts_with(['!', '?', '/']) {
            i = html[i..].find('>').map_or(b.len(), |e| i + e + 1);
            continue;
        }
        let name_end = html[i..].find(|c: char| c.is_ascii_whitespace() || c == '>' || c == '/').map_or(b.len(), |e| i + e);
        let tag = html[i..name_end].to_ascii_lowercase();
        if tag.is_empty() || !tag.starts_with(|c: char| c.is_ascii_alphabetic()) {
            continue;
        }
        i = name_end;
        loop {
            while i < b.len() && (ws(b[i]) || (b[i] == b'/' && b.get(i + 1) != Some(&b'>'))) {
                i += 1;
            }
            if i >= b.len() {
                break;
            }
            if b[i] == b'>' || html[i..].starts_with("/>") {
                i += if b[i] == b'>' { 1 } else { 2 };
                break;
            }
            let n_end = html[i..].find(|c: char| c.is_ascii_whitespace() || c == '=' || c == '>').map_or(b.len(), |e| i + e);
            let name = html[i..n_end].trim_end_matches('/').to_ascii_lowercase();
            i = n_end;
            while i < b.len() && ws(b[i]) {
                i += 1;
            }
            let mut value = String::new();
            if i < b.len() && b[i] == b'=' {
                i += 1;
                while i < b.len() && ws(b[i]) {
                    i += 1;
                }
                if i < b.len() && (b[i] == b'"' || b[i] == b'\'') {
                    let q = b[i] as char;
                    let end = html[i + 1..].find(q).map_or(b.len(), |e| i + 1 + e);
                    value = unescape(&html[i + 1..end]);
                    i = (end + 1).min(b.len());
                } else {
                    let end = html[i..].find(|c: char| c.is_ascii_whitespace() || c == '>').map_or(b.len(), |e| i + e);
                    value = unescape(&html[i..end]);
                    i = end;
                }
            }
            attrs.push(Attr { tag: tag.clone(), name, value, at: start });
        }
        if tag == "script" || tag == "style" {
            let end = html[i..].find(&format!("</{tag}")).map_or(b.len(), |e| i + e);
            if tag == "style" {
                styles.push(html[i..end].to_string());
            }
            i = end;
        }
    }
    (attrs, styles)
}

/// Where an address in a page leads.
#[derive(Debug, PartialEq)]
pub(crate) enum Target {
    /// A path (and query) on the server itself.
    Here(String),
    /// A place in the same page.
    Fragment,
    /// A `data:` URL (nothing fetched).
    Data,
    /// Anywhere else.
    Outside(String),
}

/// Where `v`, written in the page at `page` (a path and query), leads.
pub(crate) fn target(page: &str, v: &str) -> Target {
    let v = v.trim();
    if v.starts_with('#') {
        return Target::Fragment;
    }
    if v.starts_with("//") || v.starts_with("\\\\") {
        return Target::Outside(v.to_string());
    }
    let scheme_end = v.find(|c: char| !(c.is_ascii_alphanumeric() || "+-.".contains(c)));
    if let Some(e) = scheme_end.filter(|&e| e > 0 && v[e..].starts_with(':')) {
        return if v[..e].eq_ignore_ascii_case("data") { Target::Data } else { Target::Outside(v.to_string()) };
    }
    let v = v.split('#').next().unwrap_or_default();
    let path = page.split('?').next().unwrap_or("/");
    let joined = if v.is_empty() {
        page.to_string()
    } else if v.starts_with('/') {
        v.to_string()
    } else if v.starts_with('?') {
        format!("{path}{v}")
    } else {
        format!("{}{v}", &path[..path.rfind('/').map_or(0, |i| i + 1)])
    };
    // Dot segments resolved (RFC 3986 5.2.4), the query kept as it is.
    let (p, q) = joined.split_once('?').map_or((joined.as_str(), None), |(p, q)| (p, Some(q)));
    let mut segments: Vec<&str> = Vec::new();
    let parts: Vec<&str> = p.split('/').skip(1).collect();
    for (k, s) in parts.iter().enumerate() {
        match *s {
            "." => {}
            ".." => {
                segments.pop();
            }
            s => segments.push(s),
        }
        if (*s == "." || *s == "..") && k + 1 == parts.len() {
            segments.push("");
        }
    }
    let mut out = format!("/{}", segments.join("/"));
    if let Some(q) = q {
        out += &format!("?{q}");
    }
    Target::Here(out)
}

/// Attributes whose value is an address the browser fetches or follows.
pub(crate) const ADDRESSES: [&str; 9] =
    ["href", "xlink:href", "src", "srcset", "action", "formaction", "poster", "data", "background"];

/// Asserts that the page `html` (at `page`) loads nothing from anywhere but the server and
/// links nowhere else — except, where `cites`, the run report's list of sources (after
/// `id="sources"`), whose links name the documents it cites. Returns the server's addresses
/// the page links to (`<a href>`, `<link href>`, `src`), to be followed.
pub(crate) fn same_origin_links(page: &str, html: &str, cites: bool) -> BTreeSet<String> {
    let (attrs, styles) = attributes(html);
    let sources = cites.then(|| html.find("id=\"sources\"")).flatten().unwrap_or(usize::MAX);
    let mut here = BTreeSet::new();
    for a in &attrs {
        if !ADDRESSES.contains(&a.name.as_str()) {
            continue;
        }
        // A srcset lists addresses with sizes.
        let values: Vec<&str> = if a.name == "srcset" {
            a.value.split(',').filter_map(|v| v.split_whitespace().next()).collect()
        } else {
            vec![a.value.as_str()]
        };
        for v in values {
            match target(page, v) {
                Target::Here(p) => {
                    // A form's action is not a link by itself (its fields make the query).
                    if a.name != "action" && a.name != "formaction" {
                        here.insert(p);
                    }
                }
                Target::Fragment | Target::Data => {}
                Target::Outside(o) => {
                    let cited = a.tag == "a" && a.name == "href" && a.at > sources;
                    assert!(cited, "{page}: <{} {}=\"{o}\"> leads outside the dashboard", a.tag, a.name);
                }
            }
        }
    }
    // Style: url(...) only of the page itself (an SVG gradient `url(#g)`) or data, no @import.
    let inline: Vec<&str> = attrs.iter().filter(|a| a.name == "style").map(|a| a.value.as_str()).collect();
    for css in styles.iter().map(String::as_str).chain(inline) {
        assert!(!css.to_ascii_lowercase().contains("@import"), "{page}: a style sheet imports another: {css}");
        for u in css.split("url(").skip(1) {
            let v = u.split(')').next().unwrap_or_default().trim().trim_matches(['"', '\'']);
            match target(page, v) {
                Target::Outside(o) => panic!("{page}: a style loads {o}"),
                Target::Here(p) if !v.starts_with('#') => {
                    here.insert(p);
                }
                _ => {}
            }
        }
    }
    // Presentation attributes (SVG's fill="url(#g)") likewise.
    for a in attrs.iter().filter(|a| a.value.contains("url(")) {
        let v = a.value.split("url(").nth(1).and_then(|u| u.split(')').next()).unwrap_or_default();
        assert!(!matches!(target(page, v.trim_matches(['"', '\''])), Target::Outside(_)), "{page}: {a:?} loads from outside");
    }
    here
}

/// The runs a page links to (`/run/ID` with a numeric ID).
pub(crate) fn run_links(page: &str, html: &str) -> BTreeSet<i64> {
    attributes(html)
        .0
        .iter()
        .filter(|a| a.name == "href")
        .filter_map(|a| match target(page, &a.value) {
            Target::Here(p) => p.split('?').next()?.strip_prefix("/run/")?.parse().ok(),
            _ => None,
        })
        .collect()
}

/// `s` percent-decoded (a board's name in its page's path).
pub(crate) fn decode(s: &str) -> String {
    let b = s.as_bytes();
    let mut o = Vec::with_capacity(b.len());
    let mut i = 0;
    while i < b.len() {
        if b[i] == b'%' && i + 2 < b.len() {
            if let Some(v) = std::str::from_utf8(&b[i + 1..i + 3]).ok().and_then(|h| u8::from_str_radix(h, 16).ok()) {
                o.push(v);
                i += 3;
                continue;
            }
        }
        o.push(b[i]);
        i += 1;
    }
    String::from_utf8_lossy(&o).into_owned()
}

/// The boards a page links to (`/board/NAME`), by name.
pub(crate) fn board_links(page: &str, html: &str) -> BTreeSet<String> {
    attributes(html)
        .0
        .iter()
        .filter(|a| a.name == "href")
        .filter_map(|a| match target(page, &a.value) {
            Target::Here(p) => Some(decode(p.split('?').next()?.strip_prefix("/board/")?)),
            _ => None,
        })
        .collect()
}

/// Whether a page's text shows `s`: escaped as the report escapes, or as a browser serialises
/// text (`&`, `<`, `>` only).
pub(crate) fn shows(html: &str, s: &str) -> bool {
    let dom = s.replace('&', "&amp;").replace('<', "&lt;").replace('>', "&gt;");
    html.contains(Html::text(s).as_str()) || html.contains(&dom)
}
