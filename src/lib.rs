//! rtgauge: is this board, kernel and configuration real-time enough for my cycle time?
//!
//! The library behind the `rtgauge` binary (which only calls [`app::main`]); tests use its typed
//! result documents. The modules follow the flow of DESIGN.md (see `docs/architecture.md`):
//! `scenario` (plan) → `audit` → `tuning` → `probe` and `load` → `aggregate` → `verdict` →
//! `result` → `report`, run in that order by `run`; each subcommand is a file of `commands`,
//! which `app` dispatches to. `vocab` is the shared vocabulary and `sys` the only module with
//! `unsafe` code.
#![deny(unsafe_code)]

pub mod aggregate;
pub mod app;
pub mod audit;
pub mod commands;
pub mod forecast;
pub mod http;
pub mod interchange;
pub mod load;
pub mod metrics;
pub mod probe;
pub mod report;
pub mod result;
pub mod run;
pub mod scenario;
pub mod serve;
pub mod store;
pub mod sys;
pub mod trace;
pub mod tuning;
pub mod verdict;
pub mod vocab;

/// The arrows between the modules run one way (docs/architecture.md): the graph of which module
/// names which (`crate::NAME` in code, tests and comments left out) has no cycle. On a cycle the
/// test names its modules and, for each arrow in it, the lines that make it.
#[cfg(test)]
mod layers {
    use std::collections::{BTreeMap, BTreeSet};
    use std::path::Path;

    /// Each module's arrows: the modules it names, each with the lines naming it.
    fn graph() -> BTreeMap<String, BTreeMap<String, Vec<String>>> {
        let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("src");
        let mut g: BTreeMap<String, BTreeMap<String, Vec<String>>> = BTreeMap::new();
        let mut files = vec![src.clone()];
        // (spelt in two pieces, so that this test does not name a module itself)
        let needle = ["crate", "::"].concat();
        while let Some(p) = files.pop() {
            if p.is_dir() {
                files.extend(std::fs::read_dir(&p).unwrap().map(|e| e.unwrap().path()));
                continue;
            }
            if p.extension().is_none_or(|e| e != "rs") {
                continue;
            }
            let rel = p.strip_prefix(&src).unwrap().to_string_lossy().into_owned();
            let from = rel.split('/').next().unwrap().trim_end_matches(".rs").to_string();
            if from == "lib" || from == "main" {
                continue;
            }
            let text = std::fs::read_to_string(&p).unwrap();
            // (a module's tests may name any module: only what ships counts)
            let code = text.split("#[cfg(test)]").next().unwrap_or_default();
            for (n, line) in code.lines().enumerate() {
                let line = line.split("//").next().unwrap_or_default();
                for (i, _) in line.match_indices(&needle) {
                    let to: String =
                        line[i + needle.len()..].chars().take_while(|c| c.is_ascii_lowercase() || *c == '_').collect();
                    if !to.is_empty() && to != from {
                        g.entry(from.clone()).or_default().entry(to).or_default().push(format!("src/{rel}:{}", n + 1));
                    }
                }
            }
        }
        g
    }

    /// The modules `from` reaches, itself left out.
    fn reached<'a>(g: &'a BTreeMap<String, BTreeMap<String, Vec<String>>>, from: &'a str) -> BTreeSet<&'a str> {
        let mut seen = BTreeSet::new();
        let mut todo = vec![from];
        while let Some(m) = todo.pop() {
            for next in g.get(m).map(|n| n.keys().map(String::as_str).collect::<Vec<_>>()).unwrap_or_default() {
                if seen.insert(next) {
                    todo.push(next);
                }
            }
        }
        seen
    }

    /// The measuring path (`run`, and the live metrics it publishes) reaches nothing of the
    /// dashboard or the command line.
    #[test]
    fn the_measuring_path_does_not_reach_the_dashboard() {
        let g = graph();
        for from in ["run", "metrics"] {
            let r = reached(&g, from);
            assert!(r.contains("probe") || from == "metrics", "{from} reaches {r:?}");
            for above in ["serve", "commands", "app"] {
                assert!(!r.contains(above), "{from} reaches {above}: {r:?}");
            }
        }
    }

    #[test]
    fn the_modules_arrows_run_one_way() {
        let g = graph();
        assert!(g.len() >= 15, "read {} modules", g.len());
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
}
