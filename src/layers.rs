//! The stairs of the workspace, checked: the crates docs/architecture.md draws exist with the
//! dependencies it draws and the modules it names; the measuring path reaches nothing of the
//! dashboard, the PostgreSQL client or the PNG renderer; the modules (every crate's) name each
//! other without a cycle; and no file of the tree has more than 900 lines of code.
//!
//! The compiler keeps a crate from naming one above it; these tests keep the page true and the
//! modules inside a crate one-way, which the compiler does not.

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

fn workspace() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).to_path_buf()
}

/// Every crate of the workspace: its short name ("model", or "rtgauge" for the top), its folder.
fn crates() -> Vec<(String, PathBuf)> {
    let mut all = vec![("rtgauge".to_string(), workspace())];
    for e in std::fs::read_dir(workspace().join("crates")).unwrap() {
        let dir = e.unwrap().path();
        all.push((dir.file_name().unwrap().to_string_lossy().into_owned(), dir));
    }
    all.sort();
    all
}

/// The names a crate's manifest lists in one of its dependency tables (`[dependencies]`), with
/// rtgauge's own crates by their short names.
fn dependencies(dir: &Path) -> BTreeSet<String> {
    let manifest: toml::Table = std::fs::read_to_string(dir.join("Cargo.toml")).unwrap().parse().unwrap();
    let deps = manifest.get("dependencies").and_then(|d| d.as_table()).cloned().unwrap_or_default();
    deps.keys().map(|k| k.strip_prefix("rtgauge-").unwrap_or(k).to_string()).collect()
}

/// The crates `from` depends on, directly or not, and every external crate they list.
fn reach(from: &str) -> (BTreeSet<String>, BTreeSet<String>) {
    let dirs: BTreeMap<String, PathBuf> = crates().into_iter().collect();
    let (mut ours, mut theirs) = (BTreeSet::new(), BTreeSet::new());
    let mut todo = vec![from.to_string()];
    while let Some(c) = todo.pop() {
        for d in dependencies(&dirs[&c]) {
            if dirs.contains_key(&d) {
                if ours.insert(d.clone()) {
                    todo.push(d);
                }
            } else {
                theirs.insert(d);
            }
        }
    }
    (ours, theirs)
}

/// The modules a crate declares at its root (`pub mod NAME;` in its lib.rs).
fn modules(dir: &Path) -> BTreeSet<String> {
    let lib = std::fs::read_to_string(dir.join("src/lib.rs")).unwrap();
    lib.lines().filter_map(|l| l.trim().strip_prefix("pub mod ").and_then(|m| m.strip_suffix(';'))).map(str::to_string).collect()
}

/// The drawing in docs/architecture.md: one line per crate between the page's `crates:` markers,
/// `crates/NAME  modules, ...  → crates, ...` (the top crate as `rtgauge`, no dependency as `—`).
fn drawn() -> Vec<(String, BTreeSet<String>, BTreeSet<String>)> {
    let page = std::fs::read_to_string(workspace().join("docs/architecture.md")).unwrap();
    let start = page.find("<!-- crates: begin -->").expect("docs/architecture.md has its drawing of the crates");
    let end = page.find("<!-- crates: end -->").unwrap();
    let set = |s: &str| -> BTreeSet<String> {
        s.split(',').map(|w| w.trim().to_string()).filter(|w| !w.is_empty() && w != "—").collect()
    };
    page[start..end]
        .lines()
        .filter_map(|l| {
            let (left, right) = l.split_once('→')?;
            let left = left.trim();
            let (name, mods) = left.split_once(' ')?;
            let name = name.strip_prefix("crates/").unwrap_or(name).to_string();
            Some((name, set(mods), set(right)))
        })
        .collect()
}

#[test]
fn the_page_draws_the_crates_as_they_are() {
    let drawn = drawn();
    let real = crates();
    assert!(real.len() >= 8, "read {} crates", real.len());
    let names: BTreeSet<&String> = drawn.iter().map(|(n, _, _)| n).collect();
    let have: BTreeSet<&String> = real.iter().map(|(n, _)| n).collect();
    assert_eq!(names, have, "docs/architecture.md draws these crates; the workspace has those");
    let dirs: BTreeMap<String, PathBuf> = real.into_iter().collect();
    // Stairs, drawn from the top: each crate uses only crates drawn below it.
    for (i, (name, _, deps)) in drawn.iter().enumerate() {
        let below: BTreeSet<&String> = drawn[i + 1..].iter().map(|(n, _, _)| n).collect();
        assert!(deps.iter().all(|d| below.contains(d)), "crates/{name} is drawn below a crate it uses: {deps:?}");
    }
    for (name, mods, deps) in &drawn {
        let ours: BTreeSet<String> = dependencies(&dirs[name]).into_iter().filter(|d| dirs.contains_key(d)).collect();
        assert_eq!(&ours, deps, "crates/{name} depends on {ours:?}; docs/architecture.md draws {deps:?}");
        let declared = modules(&dirs[name]);
        assert_eq!(&declared, mods, "crates/{name} declares the modules {declared:?}; docs/architecture.md names {mods:?}");
    }
}

/// The measuring path — the probes, loads, aggregation, tuning, tracing, audit and verdict, and
/// the run that calls them — reaches nothing of the dashboard or the PNG renderer; the measuring
/// crate reaches no database client and no HTTP server either.
#[test]
fn the_measuring_path_does_not_reach_the_lab() {
    let (ours, theirs) = reach("measure");
    assert_eq!(ours, ["forecast", "model", "sys"].map(String::from).into(), "measure reaches {ours:?}");
    for lab in ["postgres", "tokio-postgres-rustls", "rustls", "axum", "hyper", "tokio", "resvg"] {
        assert!(!theirs.contains(lab), "measure depends on {lab}");
    }
    assert!(theirs.contains("rtrb") && theirs.contains("libc"), "read measure's dependencies: {theirs:?}");
    let (ours, theirs) = reach("run");
    assert!(ours.contains("measure") && !ours.contains("lab"), "run reaches {ours:?}");
    // The run keeps its result through `keep::Keep`, which the command line gives it: it knows
    // no store, and no database client.
    assert!(!ours.contains("store"), "run reaches the store: {ours:?}");
    for lab in ["postgres", "tokio-postgres-rustls", "resvg"] {
        assert!(!theirs.contains(lab), "run depends on {lab}");
    }
    let (ours, _) = reach("rtgauge");
    assert!(ours.contains("lab"), "the command line has the lab's commands");
    // The generator of known tails is for tests and examples: a dev-dependency, never the binary's.
    assert!(!ours.contains("truth"), "the binary depends on the test generator: {ours:?}");
}

/// Every `.rs` file under `dir`.
fn rust_files(dir: &Path, out: &mut Vec<PathBuf>) {
    let Ok(entries) = std::fs::read_dir(dir) else { return };
    for e in entries {
        let p = e.unwrap().path();
        if p.is_dir() {
            if p.file_name().is_some_and(|n| n != "target" && n != "vm") {
                rust_files(&p, out);
            }
        } else if p.extension().is_some_and(|e| e == "rs") {
            out.push(p);
        }
    }
}

/// Each module's arrows: the modules it names (`crate::NAME` in code that ships: tests and
/// comments left out), each with the lines naming it. A module is a crate's top-level module; a
/// crate names a lower crate's module through the same path, so one graph spans the workspace.
fn graph() -> BTreeMap<String, BTreeMap<String, Vec<String>>> {
    let mut g: BTreeMap<String, BTreeMap<String, Vec<String>>> = BTreeMap::new();
    // (spelt in two pieces, so that this test does not name a module itself)
    let needle = ["crate", "::"].concat();
    for (_, dir) in crates() {
        let src = dir.join("src");
        let mut files = Vec::new();
        rust_files(&src, &mut files);
        for p in files {
            let rel = p.strip_prefix(&src).unwrap().to_string_lossy().into_owned();
            let from = rel.split('/').next().unwrap().trim_end_matches(".rs").to_string();
            // (a module's tests in a file of their own count: they are the module's, and a module
            // whose tests need a module above it sits at the wrong depth)
            if from == "lib" || from == "main" || from == "layers" {
                continue;
            }
            let text = std::fs::read_to_string(&p).unwrap();
            // (a module's tests may name any module: only what ships counts)
            let code = text.split("#[cfg(test)]").next().unwrap_or_default();
            for (n, line) in code.lines().enumerate() {
                let line = line.split("//").next().unwrap_or_default();
                for (i, _) in line.match_indices(&needle) {
                    let rest = &line[i + needle.len()..];
                    let mut named: Vec<String> = Vec::new();
                    if let Some(group) = rest.strip_prefix('{') {
                        // `crate::{a, b::c}`: each name of the group
                        let group = group.split('}').next().unwrap_or_default();
                        named.extend(group.split(',').map(|w| w.trim().split("::").next().unwrap_or_default().to_string()));
                    } else {
                        named.push(rest.chars().take_while(|c| c.is_ascii_lowercase() || *c == '_').collect());
                    }
                    for to in named {
                        if !to.is_empty() && to != from {
                            let at = format!("{}:{}", p.strip_prefix(workspace()).unwrap().display(), n + 1);
                            g.entry(from.clone()).or_default().entry(to).or_default().push(at);
                        }
                    }
                }
            }
        }
    }
    g
}

#[test]
fn the_modules_arrows_run_one_way() {
    let g = graph();
    assert!(g.len() >= 18, "read {} modules", g.len());
    assert!(g["run"].contains_key("probe") && g["commands"].contains_key("run"), "the graph was read: {:?}", g["run"]);
    // Every cycle shows as a module that reaches itself.
    for start in g.keys() {
        let mut seen = BTreeSet::new();
        let mut stack: Vec<Vec<&String>> = vec![vec![start]];
        while let Some(path) = stack.pop() {
            let last = *path.last().unwrap();
            for next in g.get(last).map(|m| m.keys().collect::<Vec<_>>()).unwrap_or_default() {
                if next == start {
                    let arrows: Vec<String> = path
                        .iter()
                        .zip(path.iter().skip(1).chain(std::iter::once(&start)))
                        .map(|(a, b)| format!("{a} -> {b} ({})", g[*a][*b].join(", ")))
                        .collect();
                    panic!("a cycle of modules: {}", arrows.join("; "));
                }
                if seen.insert(next) {
                    let mut longer = path.clone();
                    longer.push(next);
                    stack.push(longer);
                }
            }
        }
    }
}

/// Lines of code: neither blank nor only a comment.
fn lines_of_code(text: &str) -> usize {
    text.lines().filter(|l| !l.trim().is_empty() && !l.trim_start().starts_with("//")).count()
}

#[test]
fn no_file_has_more_than_900_lines_of_code() {
    let mut files = Vec::new();
    for dir in ["src", "crates", "tests", "examples"] {
        rust_files(&workspace().join(dir), &mut files);
    }
    assert!(files.len() > 150, "read {} files", files.len());
    let long: Vec<String> = files
        .iter()
        .filter_map(|p| {
            let n = lines_of_code(&std::fs::read_to_string(p).unwrap());
            (n > 900).then(|| format!("{} ({n} lines of code)", p.strip_prefix(workspace()).unwrap().display()))
        })
        .collect();
    assert!(long.is_empty(), "split these files: {}", long.join(", "));
    assert_eq!(lines_of_code("a\n\n  // b\n  c // d\n"), 2);
}

/// The code that ships, file by file, its tests left out (files named `skip` too): (path from
/// the workspace, code).
fn shipped_files(skip: &[&str]) -> Vec<(String, String)> {
    let mut out = Vec::new();
    for (_, dir) in crates() {
        let mut files = Vec::new();
        rust_files(&dir.join("src"), &mut files);
        for p in files {
            if p.file_name().is_some_and(|n| n == "tests.rs" || n == "layers.rs" || skip.iter().any(|s| n == *s)) {
                continue;
            }
            let text = std::fs::read_to_string(&p).unwrap();
            let code = text.split("#[cfg(test)]").next().unwrap_or_default().to_string();
            out.push((p.strip_prefix(workspace()).unwrap().display().to_string(), code));
        }
    }
    out
}

/// The code that ships, line by line (tests and comments left out): (path, line number, line).
fn shipped_lines() -> Vec<(String, usize, String)> {
    let mut out = Vec::new();
    for (shown, code) in shipped_files(&[]) {
        for (n, line) in code.lines().enumerate() {
            let line = line.split("//").next().unwrap_or_default();
            out.push((shown.clone(), n + 1, line.to_string()));
        }
    }
    out
}

/// A result document is written in `result/` and read everywhere: outside it, no line sets
/// one of the fields the stages after the assembly change (its verdict, board, identity,
/// command line, import record, place in a rotated series) on a document (`r`, `run`,
/// `result`, `doc`) — they go through `RunResult`'s methods (`judged`, `on_board`, ...) — and
/// one function makes a verdict (`verdict::judge`; `evaluate` is private to `verdict`).
#[test]
fn a_document_changes_only_through_its_methods() {
    let lines = shipped_lines();
    assert!(lines.len() > 40_000, "read {} lines", lines.len());
    let fields = ["verdict", "board", "uuid", "imported", "continuous", "command_line"];
    let names = ["r", "run", "result", "doc", "document"];
    let writes = |line: &str| {
        names.iter().any(|n| {
            fields.iter().any(|f| {
                let at = format!("{n}.{f}");
                line.match_indices(&at).any(|(i, _)| {
                    let before = line[..i].chars().next_back();
                    let rest = line[i + at.len()..].trim_start();
                    !before.is_some_and(|c| c.is_alphanumeric() || c == '_' || c == '.')
                        && rest.starts_with('=')
                        && !rest.starts_with("==")
                })
            })
        })
    };
    assert!(writes("    r.verdict = v;") && writes("run.board = Some(b);") && !writes("if r.verdict == v {"));
    assert!(!writes("f.board = Some(name);") && !writes("self.r.uuid == x"));
    let outside: Vec<String> = lines
        .iter()
        .filter(|(p, _, l)| !p.starts_with("crates/model/src/result/") && writes(l))
        .map(|(p, n, l)| format!("{p}:{n}: {}", l.trim()))
        .collect();
    assert!(outside.is_empty(), "a document written outside result/:\n{}", outside.join("\n"));
    // A series' analyses and timeline, whatever names it: written by the document's methods
    // (`analysed`, `unanalysed`, `timelines_taken`, `timelines_put_back`).
    let series_writes = |line: &str| {
        ["forecast", "convergence", "timeline"].iter().any(|f| {
            let at = format!(".{f}");
            line.match_indices(&at).any(|(i, _)| {
                let after = &line[i + at.len()..];
                let rest = after.trim_start();
                !after.starts_with(|c: char| c.is_alphanumeric() || c == '_') && rest.starts_with('=') && !rest.starts_with("==")
            })
        })
    };
    assert!(series_writes("p.forecast = Some(f);") && series_writes("r.probes[i].timeline = None;"));
    assert!(
        !series_writes("if p.forecast == None {") && !series_writes("p.forecasts = true;") && !series_writes("let forecast = 1;")
    );
    // (where a series is made, not changed: the run's assembly of its entries, and the
    // aggregation's accounts, which are not the document)
    let making = ["crates/run/src/run/assemble.rs", "crates/measure/src/aggregate/"];
    let outside: Vec<String> = lines
        .iter()
        .filter(|(p, _, l)| {
            !p.starts_with("crates/model/src/result/") && !making.iter().any(|m| p.starts_with(m)) && series_writes(l)
        })
        .map(|(p, n, l)| format!("{p}:{n}: {}", l.trim()))
        .collect();
    assert!(outside.is_empty(), "a series' analysis written outside result/:\n{}", outside.join("\n"));
    let verdicts: Vec<String> = lines
        .iter()
        .filter(|(p, _, l)| !p.starts_with("crates/measure/src/verdict/") && l.contains("evaluate("))
        .map(|(p, n, _)| format!("{p}:{n}"))
        .collect();
    assert!(verdicts.is_empty(), "a verdict made outside verdict::judge: {verdicts:?}");
}

/// Errors have types at the boundaries: no `pub fn` of any crate returns `Result<_, String>`
/// (nor `Option<Result<_, String>>`); a module's private helpers may, and the public function
/// that calls them names the class (`vocab::Error`, `StoreError`, anyhow at the command line).
#[test]
fn public_functions_return_typed_errors() {
    let lines = shipped_lines();
    // Each `pub fn`'s signature, joined from its first line to its body's `{` (or `;`).
    let mut signatures: Vec<(String, usize, String)> = Vec::new();
    let mut open: Option<(String, usize, String)> = None;
    for (p, n, l) in &lines {
        if open.is_none() && l.trim_start().starts_with("pub fn ") {
            open = Some((p.clone(), *n, String::new()));
        }
        if let Some((_, _, sig)) = open.as_mut() {
            sig.push_str(l.trim());
            sig.push(' ');
            if l.contains('{') || l.trim_end().ends_with(';') {
                let (p, n, sig) = open.take().unwrap();
                signatures.push((p, n, sig.split('{').next().unwrap_or_default().to_string()));
            }
        }
    }
    assert!(signatures.len() > 500, "read {} public functions", signatures.len());
    // The return type's error, past the arguments (whose closures may return anything).
    let text_error = |sig: &str| {
        let ret = sig.rsplit_once(") ->").map_or("", |(_, r)| r).replace(' ', "");
        ret.ends_with(",String>") && ret.contains("Result<") || ret.ends_with(",String>>") && ret.starts_with("Option<Result<")
    };
    assert!(
        text_error("pub fn parse(s: &str) -> Result<u64, String> ") && !text_error("pub fn f() -> Result<Vec<String>, Error> ")
    );
    assert!(!text_error("pub fn save(w: impl FnMut() -> Result<(), String>) -> io::Result<()> "));
    let untyped: Vec<String> =
        signatures.iter().filter(|s| text_error(&s.2)).map(|(p, n, s)| format!("{p}:{n}: {}", s.trim())).collect();
    assert!(untyped.is_empty(), "a public function whose error is text:\n{}", untyped.join("\n"));
}

/// The text of every `html!( … )` invocation in the code that ships (the part after `html!(` up
/// to its closing parenthesis), with its file.
fn html_invocations() -> Vec<(String, String)> {
    let mut out = Vec::new();
    for (shown, code) in shipped_files(&["markup.rs"]) {
        let mut rest = code.as_str();
        // (`html!(` and `html_into!(` alike: the literal is the first string of either)
        while let Some(at) = rest.find("html!(").map(|i| i + 6).into_iter().chain(rest.find("html_into!(").map(|i| i + 11)).min()
        {
            let body = &rest[at..];
            let (mut depth, mut in_string, mut escaped, mut end) = (1, false, false, body.len());
            for (i, c) in body.char_indices() {
                match (in_string, escaped, c) {
                    (true, true, _) => escaped = false,
                    (true, false, '\\') => escaped = true,
                    (true, false, '"') => in_string = false,
                    (false, _, '"') => in_string = true,
                    (false, _, '(') => depth += 1,
                    (false, _, ')') => {
                        depth -= 1;
                        if depth == 0 {
                            end = i;
                            break;
                        }
                    }
                    _ => {}
                }
            }
            out.push((shown.clone(), body[..end].to_string()));
            rest = &body[end..];
        }
    }
    out
}

/// HTML is written through `report::markup` alone: no page is escaped by hand (no `esc(` in the
/// report or the dashboard) and no `html!` literal names a variable of the scope (`{name}` without
/// `name = …`), which would go in without being rendered. Names in capitals are constants of
/// the source (`{L}`, `{RUN_HEADERS}`): markup or numbers written there.
#[test]
fn html_is_written_through_markup() {
    let calls = html_invocations();
    assert!(calls.len() > 60, "read {} html! invocations", calls.len());
    let captured = |body: &str| -> Vec<String> {
        // The literal: from its opening quote to the first quote not escaped.
        let open = body.find('"').map_or(body.len(), |i| i + 1);
        let mut end = body.len();
        let mut escaped = false;
        for (i, c) in body[open..].char_indices() {
            match (escaped, c) {
                (true, _) => escaped = false,
                (false, '\\') => escaped = true,
                (false, '"') => {
                    end = open + i;
                    break;
                }
                _ => {}
            }
        }
        let literal = body[open.min(end)..end].replace("{{", "");
        // The arguments given by name after the literal (`, name = value`, not `==`).
        let named: Vec<String> = body[end.min(body.len())..]
            .split(',')
            .filter_map(|a| {
                let (name, value) = a.split_once('=')?;
                let name = name.trim();
                let ident = !name.is_empty() && name.chars().all(|c| c.is_alphanumeric() || c == '_');
                (ident && !value.starts_with('=')).then(|| name.to_string())
            })
            .collect();
        literal
            .split('{')
            .skip(1)
            .filter_map(|p| {
                let name: String = p.chars().take_while(|c| c.is_alphanumeric() || *c == '_').collect();
                let lower = name.chars().next().is_some_and(|c| c.is_ascii_lowercase() || c == '_');
                (lower && !named.contains(&name)).then_some(name)
            })
            .collect()
    };
    assert_eq!(captured("\"<td>{x}</td>\", y = 1"), ["x"]);
    assert_eq!(captured("\"<td>{id}{c}</td>\", uuid = u, f(c == 2)"), ["id", "c"]);
    assert!(captured("\"<td>{x:.1}{L}{}</td>\", x = v, 3").is_empty());
    let bypassed: Vec<String> = calls
        .iter()
        .filter_map(|(p, b)| {
            let names = captured(b);
            (!names.is_empty()).then(|| format!("{p}: {names:?} in html!({})", b.chars().take(120).collect::<String>()))
        })
        .collect();
    assert!(bypassed.is_empty(), "a variable captured by an html! literal, not rendered:\n{}", bypassed.join("\n"));
    let by_hand: Vec<String> = shipped_lines()
        .into_iter()
        .filter(|(p, _, l)| {
            (p.starts_with("crates/lab/") || p.starts_with("crates/report/"))
                && l.match_indices("esc(").any(|(i, _)| !l[..i].ends_with(|c: char| c.is_alphanumeric() || c == '_'))
        })
        .map(|(p, n, l)| format!("{p}:{n}: {}", l.trim()))
        .collect();
    assert!(by_hand.is_empty(), "HTML escaped by hand:\n{}", by_hand.join("\n"));
}

/// One way to draw (issue 38, item 6): every plot, the report's and the dashboard's, is an SVG
/// begun by `report::svg`'s canvas — no other shipped line opens an `<svg` element — and no
/// crate of the workspace depends on a plotting library.
#[test]
fn every_plot_is_drawn_by_one_svg_module() {
    let openers: Vec<String> = shipped_lines()
        .into_iter()
        .filter(|(p, _, l)| l.contains("<svg") && !l.trim_start().starts_with("//") && p != "crates/report/src/report/svg.rs")
        .map(|(p, n, l)| format!("{p}:{n}: {}", l.trim()))
        .collect();
    assert!(openers.is_empty(), "an SVG element begun outside report::svg:\n{}", openers.join("\n"));
    let root = std::path::Path::new(env!("CARGO_MANIFEST_DIR"));
    let mut manifests = vec![root.join("Cargo.toml")];
    for e in std::fs::read_dir(root.join("crates")).unwrap() {
        manifests.push(e.unwrap().path().join("Cargo.toml"));
    }
    for m in manifests.iter().filter(|m| m.exists()) {
        let text = std::fs::read_to_string(m).unwrap();
        for library in ["plotters", "charts-rs", "poloto", "plotlib"] {
            assert!(!text.lines().any(|l| l.trim_start().starts_with(library)), "{} depends on {library}", m.display());
        }
    }
    assert!(manifests.len() >= 9, "read {} manifests", manifests.len());
}
