//! A plain text table, as the summary and the listings print them: columns as wide as their
//! widest cell, figures right-aligned, every cell shown escaped.

use comfy_table::{presets::NOTHING, CellAlignment, ContentArrangement, Table};

/// A plain table whose columns are as wide as their widest value (nothing merges however
/// large a figure grows); the columns in `right` are right-aligned (the figures). Every cell is
/// shown escaped ([`super::text::shown`]): a label or a host name cannot break a row or add one.
pub fn table(header: &[&str], right: std::ops::Range<usize>, rows: Vec<Vec<String>>) -> String {
    let mut t = Table::new();
    t.load_preset(NOTHING).set_content_arrangement(ContentArrangement::Disabled).set_header(header.to_vec());
    for r in rows {
        t.add_row(r.iter().map(|c| super::text::shown(c).into_owned()).collect::<Vec<String>>());
    }
    for (i, c) in t.column_iter_mut().enumerate() {
        c.set_padding((0, 1));
        if right.contains(&i) {
            c.set_cell_alignment(CellAlignment::Right);
        }
    }
    let text = t.to_string();
    text.lines().map(str::trim_end).collect::<Vec<_>>().join("\n") + "\n"
}
