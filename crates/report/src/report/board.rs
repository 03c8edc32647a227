//! What the reports show of the board a run was measured on (`crate::result::board`): in the
//! summary (`run`, `show`) its name, what identifies it, its kernel configuration and the options
//! that differ from the board's last stored run; in the HTML report all of it; in `compare` the
//! board of each run and, for runs of the same board on different kernel configurations, the
//! options that differ between them — the OSADL farm's "same hardware, different kernel
//! configuration" comparison. What a board's system or a user wrote is shown through
//! [`shown`] (terminal) or [`esc`] (HTML); what the system did not say is left out.

use super::html::Named;
use super::markup::Html;
use super::shown;
use crate::html;
use crate::result::board::{Board, ConfigChanges, KernelOptions};
use crate::result::RunResult;
use crate::vocab::Count;
use serde::Serialize;
use std::fmt::Write;

/// How many hexadecimal digits of a configuration's SHA-256 the terminal shows.
pub const HASH_DIGITS: usize = 12;
/// How many of the options that differ the summary lists (all of them: `--json`, the report).
const SUMMARY_LISTED: usize = 5;
/// How many of the options that differ `compare` lists on the terminal (all: `--json`, `--html`).
const COMPARE_LISTED: usize = 20;
/// The terminal's width the lines keep to.
const WIDTH: usize = 80;

/// The start of a configuration's SHA-256, as the terminal shows it.
pub fn short_hash(sha256: &str) -> &str {
    sha256.get(..HASH_DIGITS).unwrap_or(sha256)
}

/// What tells the board apart in a lab, as known: its device-tree model, else its DMI vendor and
/// product, else its most specific compatible string.
pub fn identity(b: &Board) -> Option<String> {
    b.model.clone().or_else(|| dmi(b)).or_else(|| b.compatible.first().cloned())
}

/// The DMI system's vendor and product ("QEMU Standard PC (Q35 + ICH9, 2009)"), as known.
pub fn dmi(b: &Board) -> Option<String> {
    joined(&b.dmi_sys_vendor, &b.dmi_product_name)
}

/// The DMI main board's vendor and name, as known.
fn dmi_board(b: &Board) -> Option<String> {
    joined(&b.dmi_board_vendor, &b.dmi_board_name)
}

fn joined(a: &Option<String>, b: &Option<String>) -> Option<String> {
    let parts: Vec<&str> = [a, b].into_iter().flatten().map(String::as_str).collect();
    (!parts.is_empty()).then(|| parts.join(" "))
}

/// Whether the board was read from a system (a measured run), not only named (an import of
/// another tool's file): then a kernel configuration it lacks was not readable.
fn was_read(b: &Board) -> bool {
    b.cmdline.is_some() || b.model.is_some() || b.dmi_sys_vendor.is_some() || !b.compatible.is_empty()
}

/// The board of a run: its own, or for a document of an older version, its host's name.
pub fn board_of(r: &RunResult) -> Board {
    r.board.clone().unwrap_or_else(|| crate::audit::board::named(&r.system.hostname))
}

/// A run an earlier configuration is named by: "run 12 (3f2a9c41)".
fn run_ref(id: i64, uuid: Option<&str>) -> String {
    match uuid {
        Some(u) => format!("run {id} ({})", u.get(..8).unwrap_or(u)),
        None => format!("run {id}"),
    }
}

/// How many options differ.
pub fn differing(c: &ConfigChanges) -> usize {
    c.changed.len() + c.added.len() + c.removed.len()
}

/// The options that differ, one line each: changed, then added, then removed.
pub fn change_lines(c: &ConfigChanges) -> Vec<String> {
    let tagged = |tag: &str, v: &[String]| v.iter().map(|o| format!("{tag} {o}")).collect::<Vec<_>>();
    [tagged("changed", &c.changed), tagged("added  ", &c.added), tagged("removed", &c.removed)].concat()
}

/// `s` cut to `n` characters, `…` marking the cut.
fn cut(s: &str, n: usize) -> String {
    if s.chars().count() <= n {
        return s.to_string();
    }
    let mut o: String = s.chars().take(n.saturating_sub(1)).collect();
    o.push('…');
    o
}

/// The first `listed` of the options that differ, after `indent`, each cut to the terminal's
/// width; a last line saying how many more and where they all are (`all_in`).
fn listed_lines(c: &ConfigChanges, indent: &str, listed: usize, all_in: &str) -> String {
    let mut s = String::new();
    let lines = change_lines(c);
    for l in lines.iter().take(listed) {
        let _ = writeln!(s, "{indent}{}", shown(&cut(l, WIDTH - indent.len())));
    }
    if lines.len() > listed {
        let _ = writeln!(s, "{indent}… and {} more: all of them in {all_in}", lines.len() - listed);
    }
    s
}

/// The summary's lines on the board (`run`, `show`): its name and what identifies it; its kernel
/// configuration (the SHA-256's start, where it was read); the options that differ from the
/// board's last stored run, the first few. Nothing for a document without a board; only the
/// name for a board that was named, not read (an import of another tool's file).
pub fn summary_lines(board: Option<&Board>) -> String {
    let Some(b) = board else { return String::new() };
    let mut s = String::new();
    let name = cut(&b.name, 32);
    match identity(b) {
        Some(id) => {
            let room = WIDTH.saturating_sub(8 + name.chars().count()).max(16);
            let _ = writeln!(s, "board {}: {}", shown(&name), shown(&cut(&id, room)));
        }
        None => {
            let _ = writeln!(s, "board {}", shown(&name));
        }
    }
    match &b.kernel_config {
        Some(k) => {
            let _ = writeln!(s, "kernel config {} ({})", shown(short_hash(&k.sha256)), shown(&cut(&k.source, 50)));
        }
        None if was_read(b) => {
            let _ = writeln!(s, "kernel config not readable (no /proc/config.gz, no /boot/config-RELEASE)");
        }
        None => {}
    }
    if let Some(c) = &b.config_changes {
        let since = run_ref(c.since_run, c.since_uuid.as_deref());
        let n = differing(c);
        if n == 0 {
            let _ = writeln!(s, "kernel configuration: the same as {}", shown(&since));
        } else {
            let differ = if n == 1 { "differs" } else { "differ" };
            let _ = writeln!(s, "kernel configuration: {} {differ} from {}:", Count(n as u64, "option"), shown(&since));
            s += &listed_lines(c, "  ", SUMMARY_LISTED, "--json and the HTML report");
        }
    }
    s
}

/// The options that differ, in full, for a page: a list each of those changed, added and removed.
fn changes_html(c: &ConfigChanges) -> Html {
    let mut h = Html::new();
    for (what, v) in [("Changed", &c.changed), ("Added", &c.added), ("Removed", &c.removed)] {
        if v.is_empty() {
            continue;
        }
        h += html!("<h4>{what} ({_0})</h4><ul class=\"kconfig\">", _0 = v.len(), what = what);
        for o in v {
            h += html!("<li><code>{}</code></li>", o);
        }
        h += "</ul>";
    }
    h
}

/// The rows of a board's table for a page: (what, the value as HTML); what is not known is left
/// out, but a kernel configuration that was not readable is said.
fn rows_html(b: &Board) -> Vec<(&'static str, Html)> {
    let mut rows = vec![("name", Html::text(&b.name))];
    let text = |v: &Option<String>| v.as_deref().map(Html::text);
    rows.extend(text(&b.model).map(|v| ("model (device tree)", v)));
    if !b.compatible.is_empty() {
        rows.push(("compatible (device tree)", Html::text(&b.compatible.join(", "))));
    }
    rows.extend(dmi(b).map(|v| ("DMI system", Html::text(&v))));
    rows.extend(dmi_board(b).map(|v| ("DMI board", Html::text(&v))));
    rows.extend(b.cmdline.as_deref().map(|c| ("kernel command line", html!("<code>{}</code>", c))));
    match &b.kernel_config {
        Some(k) => {
            rows.push(("kernel configuration", html!("SHA-256 <code>{}</code>, read from <code>{}</code>", &k.sha256, &k.source)))
        }
        None if was_read(b) => {
            rows.push(("kernel configuration", Html::lit("not readable (no /proc/config.gz, no /boot/config-RELEASE)")))
        }
        None => {}
    }
    rows
}

fn table_html(rows: &[(&str, Html)]) -> Html {
    let mut h = Html::lit("<table class=\"board\"><tbody>");
    for (k, v) in rows {
        h += html!("<tr><th>{k}</th><td>{v}</td></tr>", k = k, v = v);
    }
    h + "</tbody></table>"
}

/// The report's "Board" block: everything the run recorded of its board, and the options that
/// differ from the board's last stored run, in full. Nothing for a document without a board.
pub fn html_block(board: Option<&Board>) -> Html {
    let Some(b) = board else { return Html::new() };
    let mut h = Html::lit("<h3>Board</h3>");
    h += table_html(&rows_html(b));
    if let Some(c) = &b.config_changes {
        let since = match &c.since_uuid {
            Some(u) => format!("run {} (UUID {})", c.since_run, u),
            None => format!("run {}", c.since_run),
        };
        let n = differing(c);
        if n == 0 {
            h += html!("<p>Kernel configuration: the same options as {}, the board's run before.</p>", &since);
        } else {
            let differ = if n == 1 { "differs" } else { "differ" };
            h += html!(
                "<p>Kernel configuration: {_0} {differ} from {_1}, the board's run before.</p>",
                _0 = Count(n as u64, "option"),
                _1 = &since,
                differ = differ
            );
            h += changes_html(c);
        }
    }
    h
}

/// How a compared run's board and kernel configuration stand to the baseline's.
#[derive(Debug, Serialize)]
pub struct BoardRelation {
    /// The run (the baseline is not related to itself).
    pub run: i64,
    /// What makes it the baseline's board: `name`, `model` (the device tree's) or `dmi` (the
    /// system's vendor and product); null: another board, the comparison is across boards.
    pub same_board: Option<&'static str>,
    /// Whether both runs ran on the same kernel configuration (the SHA-256 of its text); null
    /// when either did not record one.
    pub same_config: Option<bool>,
    /// The options that differ, from the baseline's configuration (`since_run`) to this run's:
    /// for the same board on another configuration whose options the store keeps.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub changes: Option<ConfigChanges>,
    /// Why the options are not listed though the configurations differ.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub not_listed: Option<String>,
}

/// What makes boards `a` and `b` the same: the same name, model or DMI system (`None`: other
/// boards).
fn same_board(a: &Board, b: &Board) -> Option<&'static str> {
    let same = |x: Option<String>, y: Option<String>| x.is_some() && x == y;
    if a.name == b.name {
        Some("name")
    } else if same(a.model.clone(), b.model.clone()) {
        Some("model")
    } else if same(dmi(a), dmi(b)) {
        Some("dmi")
    } else {
        None
    }
}

/// The kernel configuration a run ran on, with its options, as a store keeps it (`None`: the
/// run recorded none, or its options are not kept there): `Store::kernel_config_of`.
pub type OptionsOf<'a> = dyn Fn(&RunResult) -> Result<Option<KernelOptions>, String> + 'a;

/// How each run after the first (the baseline) stands to it: the same board or not, the same
/// kernel configuration or not, and for the same board on another configuration the options
/// that differ, from what `options` finds (the store keeps each configuration once).
pub fn relations(runs: &[Named], options: &OptionsOf) -> Result<Vec<BoardRelation>, crate::vocab::Error> {
    relations_text(runs, options).map_err(crate::vocab::Error::System)
}

/// [`relations`], its failure as text.
fn relations_text(runs: &[Named], options: &OptionsOf) -> Result<Vec<BoardRelation>, String> {
    let Some((base, rest)) = runs.split_first() else { return Ok(Vec::new()) };
    let base_board = board_of(&base.result);
    let mut out = Vec::new();
    for n in rest {
        let b = board_of(&n.result);
        let same = same_board(&base_board, &b);
        let (ka, kb) = (base_board.kernel_config.as_ref(), b.kernel_config.as_ref());
        let same_config = ka.zip(kb).map(|(x, y)| x.sha256 == y.sha256);
        let mut rel = BoardRelation { run: n.id, same_board: same, same_config, changes: None, not_listed: None };
        if let (Some(_), Some(false)) = (same, same_config) {
            match (options(&base.result)?, options(&n.result)?) {
                (Some(before), Some(now)) => {
                    let uuid = base.result.uuid.map(|u| u.to_string());
                    rel.changes = Some(crate::audit::board::config_changes(base.id, uuid, &before.options, &now.options));
                }
                (before, _) => {
                    let whose = if before.is_none() { format!("run {}'s", base.id) } else { format!("run {}'s", n.id) };
                    rel.not_listed = Some(format!("the store does not keep the options of {whose} configuration"));
                }
            }
        }
        out.push(rel);
    }
    Ok(out)
}

/// A board as `compare` names it on one line: its name and what identifies it, its configuration.
fn one_line(b: &Board, room: usize) -> String {
    let name = cut(&b.name, 30);
    let config = b.kernel_config.as_ref().map_or(String::new(), |k| format!(", kernel config {}", short_hash(&k.sha256)));
    let left = room.saturating_sub(name.chars().count() + config.chars().count() + 3);
    let id = identity(b).filter(|_| left >= 8).map_or(String::new(), |i| format!(" ({})", cut(&i, left)));
    format!("{name}{id}{config}")
}

/// What the same board is: "same board (rpi4-lab-3)", "same hardware (model …)".
fn same_what(b: &Board, how: &str) -> String {
    match how {
        "model" => format!("same hardware (model {})", cut(b.model.as_deref().unwrap_or(""), 20)),
        "dmi" => format!("same hardware ({})", cut(&dmi(b).unwrap_or_default(), 26)),
        _ => format!("same board ({})", cut(&b.name, 26)),
    }
}

/// Whose kernel configuration is not recorded, of run `n` and the baseline.
fn unrecorded(base: &Board, b: &Board, n: i64) -> String {
    match (base.kernel_config.is_none(), b.kernel_config.is_none()) {
        (true, true) => "either run's".into(),
        (true, false) => "the baseline's".into(),
        _ => format!("run {n}'s"),
    }
}

/// Where the options of a configuration come from, when the store does not keep them.
const IMPORTED_HINT: &str = "a run imported from a file brings its configuration's SHA-256 alone";

/// The sentences on each run's board against the baseline's (within the terminal's width; the
/// options listed below, the first `listed`).
fn relation_lines(runs: &[Named], rels: &[BoardRelation], listed: usize, all_in: &str) -> String {
    let mut s = String::new();
    let Some(base) = runs.first() else { return s };
    let base_board = board_of(&base.result);
    for rel in rels {
        let Some(n) = runs.iter().find(|n| n.id == rel.run) else { continue };
        let b = board_of(&n.result);
        let Some(how) = rel.same_board else {
            let _ = writeln!(
                s,
                "Run {} is on {}, the baseline on {}:\n  the comparison is across boards.",
                n.id,
                shown(&cut(&b.name, 24)),
                shown(&cut(&base_board.name, 24))
            );
            continue;
        };
        let same = shown(&same_what(&b, how)).into_owned();
        match (rel.same_config, &rel.changes) {
            (Some(true), _) => {
                let _ = writeln!(s, "Run {}: {same}, same kernel configuration.", n.id);
            }
            (None, _) => {
                let whose = unrecorded(&base_board, &b, n.id);
                let _ = writeln!(s, "Run {}: {same};\n  {whose} kernel configuration is not recorded.", n.id);
            }
            (Some(false), Some(c)) => {
                let n_opts = differing(c);
                let differ = if n_opts == 1 { "differs" } else { "differ" };
                let _ = writeln!(s, "Run {}: {same}, another kernel configuration:", n.id);
                let _ = writeln!(s, "  {} {differ} from the baseline's:", Count(n_opts as u64, "option"));
                s += &listed_lines(c, "    ", listed, all_in);
            }
            (Some(false), None) => {
                let _ = writeln!(s, "Run {}: {same}, another kernel configuration;", n.id);
                let why = rel.not_listed.as_deref().unwrap_or("its options are not known");
                let _ = writeln!(s, "  {}\n  ({IMPORTED_HINT}).", shown(why));
            }
        }
    }
    s
}

/// `compare`'s section on the boards (terminal): each run's board, then how each run's stands to
/// the baseline's.
pub fn compare_text(runs: &[Named], rels: &[BoardRelation]) -> String {
    let mut s = String::from("Boards:\n");
    for n in runs {
        let head = format!("  run {}: ", n.id);
        let room = WIDTH - head.chars().count();
        let _ = writeln!(s, "{head}{}", shown(&one_line(&board_of(&n.result), room)));
    }
    s + &relation_lines(runs, rels, COMPARE_LISTED, "--json and --html")
}

/// `compare --html`'s section on the boards: a table of each run's board, then how each run's
/// stands to the baseline's, the options that differ in full.
pub fn compare_html(runs: &[Named], rels: &[BoardRelation]) -> Html {
    // A column per run, a row per field any run has (in the order a board's table gives them).
    let mut h = Html::lit("<h2>Boards</h2><table class=\"board\"><thead><tr><th></th>");
    for n in runs {
        h += html!("<th>run {}</th>", n.id);
    }
    h += "</tr></thead><tbody>";
    let rows: Vec<Vec<(&str, Html)>> = runs.iter().map(|n| rows_html(&board_of(&n.result))).collect();
    let mut fields: Vec<&str> = Vec::new();
    for r in &rows {
        for (k, _) in r {
            if !fields.contains(k) {
                fields.push(k);
            }
        }
    }
    for f in &fields {
        h += html!("<tr><th>{f}</th>", f = f);
        for r in &rows {
            h += html!("<td>{}</td>", r.iter().find(|(k, _)| k == f).map_or(Html::new(), |(_, v)| v.clone()));
        }
        h += "</tr>";
    }
    h += "</tbody></table>";
    let Some(base) = runs.first() else { return h };
    for rel in rels {
        let Some(n) = runs.iter().find(|n| n.id == rel.run) else { continue };
        let b = board_of(&n.result);
        let Some(how) = rel.same_board else {
            h += html!(
                "<p>Run {} is on {}, the baseline (run {}) on {}: the comparison is across boards.</p>",
                n.id,
                &b.name,
                base.id,
                &board_of(&base.result).name
            );
            continue;
        };
        let same = Html::text(&same_what(&b, how));
        match (rel.same_config, &rel.changes) {
            (Some(true), _) => {
                h += html!(
                    "<p>Run {_0}: {same}, same kernel configuration as the baseline (run {_1}).</p>",
                    _0 = n.id,
                    _1 = base.id,
                    same = same
                );
            }
            (None, _) => {
                let whose = unrecorded(&board_of(&base.result), &b, n.id);
                h += html!(
                    "<p>Run {_0}: {same}; {whose} kernel configuration is not recorded.</p>",
                    _0 = n.id,
                    same = same,
                    whose = whose
                );
            }
            (Some(false), Some(c)) => {
                let n_opts = differing(c);
                let differ = if n_opts == 1 { "differs" } else { "differ" };
                h += html!(
                    "<p>Run {_0}: {same}, another kernel configuration: {_1} {differ} from the baseline's (run {_2}).</p>",
                    _0 = n.id,
                    _1 = Count(n_opts as u64, "option"),
                    _2 = base.id,
                    same = same,
                    differ = differ
                );
                h += changes_html(c);
            }
            (Some(false), None) => {
                h += html!(
                    "<p>Run {_0}: {same}, another kernel configuration; {_1} ({IMPORTED_HINT}).</p>",
                    _0 = n.id,
                    _1 = rel.not_listed.as_deref().unwrap_or("its options are not known"),
                    same = same
                );
            }
        }
    }
    h
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::result::board::KernelConfigId;
    use std::collections::BTreeMap;

    fn board(name: &str, model: Option<&str>, sha: Option<&str>) -> Board {
        Board {
            name: name.into(),
            model: model.map(str::to_string),
            cmdline: Some("console=ttyS0".into()),
            kernel_config: sha.map(|s| KernelConfigId { source: "/proc/config.gz".into(), sha256: s.into() }),
            ..Board::default()
        }
    }

    #[test]
    fn a_board_is_the_same_by_name_model_or_dmi_and_else_another() {
        let a = board("rpi4-lab-3", Some("Raspberry Pi 4 Model B"), None);
        assert_eq!(same_board(&a, &board("rpi4-lab-3", None, None)), Some("name"));
        assert_eq!(same_board(&a, &board("rpi4-lab-4", Some("Raspberry Pi 4 Model B"), None)), Some("model"));
        let dmi = |name: &str| Board { dmi_sys_vendor: Some("QEMU".into()), ..board(name, None, None) };
        assert_eq!(same_board(&dmi("vm-1"), &dmi("vm-2")), Some("dmi"));
        assert_eq!(same_board(&board("a", None, None), &board("b", None, None)), None, "nothing known is not the same");
    }

    #[test]
    fn the_summary_names_the_board_its_configuration_and_the_options_that_changed() {
        let mut b = board("lab\x1b[2J", Some("Raspberry Pi 4 Model B Rev 1.4"), Some(&"ab".repeat(32)));
        let before: BTreeMap<String, String> = (0..9).map(|i| (format!("OPT{i}"), "y".to_string())).collect();
        let mut now = before.clone();
        now.insert("HZ".into(), "1000".into());
        now.insert("OPT0".into(), "m".into());
        now.remove("OPT1");
        b.config_changes = Some(crate::audit::board::config_changes(12, Some("3f2a9c41-0b1c".into()), &before, &now));
        let text = summary_lines(Some(&b));
        let lines: Vec<&str> = text.lines().collect();
        assert_eq!(lines[0], "board lab\\x1b[2J: Raspberry Pi 4 Model B Rev 1.4");
        assert_eq!(lines[1], "kernel config abababababab (/proc/config.gz)");
        assert_eq!(lines[2], "kernel configuration: 3 options differ from run 12 (3f2a9c41):");
        assert_eq!(&lines[3..], ["  changed CONFIG_OPT0: y -> m", "  added   CONFIG_HZ=1000", "  removed CONFIG_OPT1=y"]);
        // The same options; then more than the summary lists.
        b.config_changes = Some(crate::audit::board::config_changes(12, None, &now, &now));
        assert!(summary_lines(Some(&b)).ends_with("kernel configuration: the same as run 12\n"));
        let many: BTreeMap<String, String> = (0..40).map(|i| (format!("NEW{i}"), "y".to_string())).collect();
        b.config_changes = Some(crate::audit::board::config_changes(12, None, &BTreeMap::new(), &many));
        let text = summary_lines(Some(&b));
        assert!(text.contains("40 options differ") && text.contains("  … and 35 more: all of them in --json"), "{text}");
        assert!(text.lines().all(|l| l.chars().count() <= WIDTH), "{text}");
    }

    #[test]
    fn what_was_not_read_is_left_out_and_an_unreadable_configuration_is_said() {
        assert_eq!(summary_lines(Some(&crate::audit::board::named("x86-box"))), "board x86-box\n");
        assert!(summary_lines(Some(&board("pc", None, None))).contains("kernel config not readable"));
        assert_eq!(summary_lines(None), "");
        let long = board(&"é".repeat(10_000), Some(&"m".repeat(500)), None);
        assert!(summary_lines(Some(&long)).lines().all(|l| l.chars().count() <= WIDTH));
    }

    #[test]
    fn the_html_block_escapes_and_lists_every_change() {
        let mut b = board("<b>lab</b>", Some("Pi & co"), Some(&"cd".repeat(32)));
        let now: BTreeMap<String, String> = (0..30).map(|i| (format!("X{i}"), "\"<y>\"".to_string())).collect();
        b.config_changes = Some(crate::audit::board::config_changes(4, None, &BTreeMap::new(), &now));
        let h = html_block(Some(&b));
        assert!(h.contains("&lt;b&gt;lab&lt;/b&gt;") && h.contains("Pi &amp; co") && !h.contains("<b>lab"));
        assert!(h.contains("<h4>Added (30)</h4>") && h.matches("<li>").count() == 30, "{h}");
        assert!(h.contains(&"cd".repeat(32)) && h.contains("console=ttyS0"));
    }
}
