//! store: what `show`, `compare` and `list` say of stored runs, and a reader that refuses every
//! write (a part of tests/store/main.rs, whose helpers it uses).

use super::*;

/// The board in `show` and `compare` (issue 23, item 3): `show` names it; `compare` of two runs
/// of the same board on two kernel configurations lists the options that differ (terminal,
/// `--json`, `--html`), from the options the store keeps once per configuration; a run whose
/// configuration the store does not keep (imported from its file) says so; two boards are a
/// comparison across boards. A kernel cannot be rebuilt here, so the two configurations are put
/// in the store as `run` puts one: the store's own `save` with the configuration's options.
#[test]
pub(crate) fn show_and_compare_name_the_board_and_list_the_kernel_options_that_differ() {
    use rtgauge::result::board::{KernelConfigId, KernelOptions};
    use std::collections::BTreeMap;
    let dir = tempfile::tempdir().unwrap();
    let db = db_in(&dir);
    let run = ["--loops", "20", "--warmup", "0", "--cpus", "0", "--load", "none", "--db", &db];
    let (code, doc, out) = run_json(&[&run[..], &["--board", "rpi4-lab-3"]].concat());
    assert_eq!(code, 0, "{}", String::from_utf8_lossy(&out.stderr));
    let shown = ok(&["show", "1", "--db", &db]);
    assert!(shown.lines().any(|l| l == "board rpi4-lab-3" || l.starts_with("board rpi4-lab-3: ")), "{shown}");
    assert!(shown.lines().all(|l| !l.starts_with("board ") || l.chars().count() <= 80), "{shown}");

    let options = |pairs: &[(&str, &str)]| -> BTreeMap<String, String> {
        pairs.iter().map(|(k, v)| (k.to_string(), v.to_string())).collect()
    };
    let before = options(&[("PREEMPT_RT", "y"), ("HZ", "250"), ("NO_HZ_FULL", "y"), ("DEBUG_PREEMPT", "y")]);
    let now = options(&[("PREEMPT_RT", "y"), ("HZ", "1000"), ("NO_HZ_FULL", "y"), ("RCU_NOCB_CPU", "y")]);
    let store = rtgauge::store::Store::open(&rtgauge::store::Location::File(db.clone().into())).unwrap();
    let on = |sha256: &str| {
        let mut r: rtgauge::result::RunResult = serde_json::from_value(doc.clone()).unwrap();
        r.uuid = None; // a run of its own
        let board = r.board.as_mut().unwrap();
        board.kernel_config = Some(KernelConfigId { source: "/proc/config.gz".into(), sha256: sha256.to_string() });
        board.config_changes = None;
        r
    };
    for (sha256, options) in [("a".repeat(64), before.clone()), ("b".repeat(64), now)] {
        let kept = KernelOptions { sha256: sha256.clone(), options };
        store.save(&mut on(&sha256), None, None, Some(kept.clone())).unwrap();
        assert_eq!(store.kernel_config_of(&on(&sha256)).unwrap(), Some(kept), "kept once, given back whole");
    }
    assert_eq!(store.kernel_config_of(&on(&"c".repeat(64))).unwrap(), None);
    drop(store);

    let text = ok(&["compare", "2", "3", "--db", &db]);
    let lines: Vec<&str> = text.lines().collect();
    let at = lines.iter().position(|l| *l == "Run 3: same board (rpi4-lab-3), another kernel configuration:").expect(&text);
    assert_eq!(
        &lines[at + 1..at + 5],
        [
            "  3 options differ from the baseline's:",
            "    changed CONFIG_HZ: 250 -> 1000",
            "    added   CONFIG_RCU_NOCB_CPU=y",
            "    removed CONFIG_DEBUG_PREEMPT=y"
        ],
        "{text}"
    );
    assert!(text.contains("  run 2: rpi4-lab-3") && text.contains("kernel config aaaaaaaaaaaa"), "{text}");
    let json: Value = serde_json::from_str(&ok(&["compare", "2", "3", "--json", "--db", &db])).unwrap();
    let rel = &json["boards"][0];
    assert_eq!(
        (rel["run"].as_u64(), rel["same_board"].as_str(), rel["same_config"].as_bool()),
        (Some(3), Some("name"), Some(false))
    );
    assert_eq!(rel["changes"]["changed"], serde_json::json!(["CONFIG_HZ: 250 -> 1000"]));
    assert_eq!(rel["changes"]["since_run"], 2);
    assert_eq!(json["runs"][1]["board"]["kernel_config"]["sha256"], "b".repeat(64));
    let page = dir.path().join("compare.html");
    ok(&["compare", "2", "3", "--db", &db, "--html", page.to_str().unwrap()]);
    let html = std::fs::read_to_string(&page).unwrap();
    for s in ["<h2>Boards</h2>", "<h4>Changed (1)</h4>", "<code>CONFIG_HZ: 250 -&gt; 1000</code>", "CONFIG_RCU_NOCB_CPU=y"] {
        assert!(html.contains(s), "{s}");
    }

    // The same run's document imported on another configuration: its SHA-256 alone is kept.
    let mut imported = doc.clone();
    imported["uuid"] = Value::Null;
    imported["board"]["kernel_config"] = serde_json::json!({"source": "/proc/config.gz", "sha256": "c".repeat(64)});
    let file = dir.path().join("elsewhere.json");
    std::fs::write(&file, serde_json::to_vec(&imported).unwrap()).unwrap();
    ok(&["import", "--db", &db, file.to_str().unwrap()]);
    let text = ok(&["compare", "2", "4", "--db", &db]);
    assert!(text.contains("Run 4: same board (rpi4-lab-3), another kernel configuration;"), "{text}");
    assert!(text.contains("the store does not keep the options of run 4's configuration"), "{text}");

    // Another board: the comparison is across boards.
    run_json(&[&run[..], &["--board", "x86-box"]].concat());
    let text = ok(&["compare", "1", "5", "--db", &db]);
    assert!(text.contains("Run 5 is on x86-box, the baseline on rpi4-lab-3:\n  the comparison is across boards."), "{text}");
    let boards = text.lines().skip_while(|l| *l != "Boards:").take_while(|l| !l.is_empty());
    assert!(boards.clone().count() == 5 && boards.into_iter().all(|l| l.chars().count() <= 80), "{text}");
}

/// The table shows the newest 100 runs that match and says how many older ones it leaves out;
/// `--limit N` shows the newest N, `--all` every one; `--json` gives every one unless `--limit`
/// says (a lab's store holds 100 000 runs).
pub(crate) fn list_shows_the_newest_runs_unless_told_and_says_how_many_more_match(b: Backend) {
    let db = b.db();
    // 103 files, each its own run (a different file: a different identity).
    let files: Vec<String> = (0..103).map(|n| distinct_file(b.dir.path(), n)).collect();
    let mut import = vec!["import", "--db", db, "--board", "rpi4-lab-3"];
    import.extend(files.iter().map(String::as_str));
    ok(&import);
    let ids = |table: &str| -> Vec<u64> {
        table.lines().filter(|l| !l.contains("not shown")).filter_map(|l| l.split_whitespace().next()?.parse().ok()).collect()
    };
    let table = ok(&["list", "--db", db]);
    assert_eq!(ids(&table), (4..=103).collect::<Vec<u64>>(), "the newest 100, oldest first");
    assert!(
        table.ends_with(
            "3 older runs not shown (the table holds the newest 100); --limit N shows the newest N, --all every one.\n"
        ),
        "{table}"
    );
    let table = ok(&["list", "--db", db, "--limit", "2", "--board", "rpi4-lab-3"]);
    assert_eq!(ids(&table), [102, 103]);
    assert!(table.contains("101 older runs not shown (the table holds the newest 2)"), "{table}");
    assert_eq!(ids(&ok(&["list", "--db", db, "--all"])), (1..=103).collect::<Vec<u64>>());
    let table = ok(&["list", "--db", db, "--limit", "103"]);
    assert_eq!(ids(&table).len(), 103);
    assert!(!table.contains("not shown"), "none left out: nothing said");
    assert_eq!(list(db, &[]).len(), 103, "--json: every one");
    assert_eq!(list(db, &["--limit", "3"]).iter().map(|r| u(&r["id"])).collect::<Vec<_>>(), [101, 102, 103]);
    for bad in [&["--limit", "0"][..], &["--limit", "5", "--all"]] {
        let (code, _, err) = cli(&[&["list", "--db", db][..], bad].concat());
        assert_eq!(code, 2, "{bad:?}: {err}");
    }
}
both!(list_shows_the_newest_runs_unless_told_and_says_how_many_more_match);

both!(a_following_reader_refuses_every_write);
/// The dashboard's connections (`Store::open_following`) refuse writes themselves: deleting a
/// run through one fails and the run is still there; reading goes on.
pub(crate) fn a_following_reader_refuses_every_write(b: Backend) {
    let b = b.another("following");
    let out = rtgauge(&["import", "--db", b.db(), &fixture("oslat.json")]).output().unwrap();
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let id = list(b.db(), &[])[0]["id"].as_i64().unwrap();
    let s = Store::open_following(&b.location()).unwrap().expect("a store");
    assert!(s.delete(id).is_err(), "a following reader may not delete");
    assert!(s.has(id).unwrap() && s.load(id).is_ok(), "the run is still there, and reads");
}
