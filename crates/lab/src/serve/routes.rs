//! The dashboard's routes: which URL reads what and answers with which page or JSON document.
//! Every handler does its store work and its drawing on a blocking thread with a connection of
//! the pool ([`super::Shared::answer`]), so the page is whole before a byte is sent: a slow
//! client holds no store connection and no lock. GET and HEAD only; the dashboard writes nothing.

use super::model::{percent, PAGE_ROWS};
use super::query::{Params, VIEW};
use super::{data, pages, Answer, Failure, Shared};
use crate::report::compare;
use crate::store::Filter;
use axum::extract::{Path, RawQuery, State};
use axum::response::Response;
use axum::routing::get;
use axum::Router;
use std::sync::Arc;

/// The most runs `/compare` takes.
pub const COMPARE_RUNS: usize = 8;

/// Every route.
pub fn router(shared: Arc<Shared>) -> Router {
    Router::new()
        .route("/", get(fleet))
        .route("/board/{name}", get(board))
        .route("/run/{run}", get(run))
        .route("/compare", get(compare_page))
        .route("/api/boards", get(api_boards))
        .route("/api/boards/{name}", get(api_board))
        .route("/api/boards/{name}/series", get(api_series))
        .route("/api/runs", get(api_runs))
        .route("/api/runs/{run}", get(api_run))
        .route("/api/compare", get(api_compare))
        .route("/static/dashboard.js", get(script))
        .route("/healthz", get(|| async { "ok\n" }))
        .fallback(not_found)
        .with_state(shared)
        // Before any route: a method that is not GET or HEAD (405), a malformed escape (400).
        .layer(axum::middleware::map_request(crate::http::strict))
        // Every answer, the server's own (405, a path that is not UTF-8) included.
        .layer(axum::middleware::map_response(|mut r: Response| async move {
            super::secure(&mut r);
            r
        }))
}

async fn not_found() -> Response {
    Failure::NotFound("no such page; the fleet page is /, the JSON API is described in docs/dashboard.md".into()).response()
}

async fn script() -> Response {
    Answer::Script(pages::SCRIPT).response(None)
}

async fn fleet(State(s): State<Arc<Shared>>, RawQuery(q): RawQuery) -> Response {
    s.answer(move |store, shown| {
        let p = Params::parse(q.as_deref())?;
        p.only(&VIEW)?;
        let fleet = data::fleet(store, &p.view()?)?;
        Ok(Answer::Html(pages::fleet::fleet(&fleet, shown).into_string()))
    })
    .await
}

async fn api_boards(State(s): State<Arc<Shared>>, RawQuery(q): RawQuery) -> Response {
    s.answer(move |store, _| {
        let p = Params::parse(q.as_deref())?;
        p.only(&VIEW)?;
        let fleet = data::fleet(store, &p.view()?)?;
        let boards: Vec<serde_json::Value> = fleet
            .rows
            .iter()
            .map(|r| {
                serde_json::json!({
                    "board": r.board.board, "runs": r.board.runs, "first_started_at": r.board.first_started_at,
                    "last_started_at": r.board.last_started_at, "latest": r.latest, "figures": r.figures,
                    "spark": r.spark, "regressions": r.regressions,
                })
            })
            .collect();
        Answer::json(&serde_json::json!({ "view": fleet.view, "boards": boards }))
    })
    .await
}

const BOARD_PARAMS: [&str; 7] = ["board", "kernel", "scenario", "label", "since", "until", "before"];

async fn board(State(s): State<Arc<Shared>>, Path(name): Path<String>, RawQuery(q): RawQuery) -> Response {
    s.answer(move |store, shown| {
        let p = Params::parse(q.as_deref())?;
        p.only(&BOARD_PARAMS)?;
        let page = data::board(store, &name, &p.view()?, p.before()?)?;
        Ok(Answer::Html(pages::board::board(&page, shown).into_string()))
    })
    .await
}

async fn api_board(State(s): State<Arc<Shared>>, Path(name): Path<String>, RawQuery(q): RawQuery) -> Response {
    s.answer(move |store, _| {
        let p = Params::parse(q.as_deref())?;
        p.only(&BOARD_PARAMS)?;
        Answer::json(&data::board(store, &name, &p.view()?, p.before()?)?)
    })
    .await
}

async fn api_series(State(s): State<Arc<Shared>>, Path(name): Path<String>, RawQuery(q): RawQuery) -> Response {
    s.answer(move |store, _| {
        let p = Params::parse(q.as_deref())?;
        p.only(&["probe", "kernel", "scenario", "label", "since", "until", "before", "limit"])?;
        let mut f = super::query::filter(&p.view()?)?;
        f.board = Some(name.clone());
        f.before_id = p.before()?;
        f.newest = Some(p.number("limit", 1..=PAGE_ROWS, PAGE_ROWS)?);
        let rows = store.list(&f).map_err(Failure::from)?;
        let ids: Vec<i64> = rows.iter().map(|r| r.id).collect();
        let figures = store.figures(&ids).map_err(Failure::from)?;
        let names: std::collections::BTreeSet<&str> =
            figures.values().flat_map(|f| f.series.iter().map(|s| s.series.as_str())).collect();
        let Some(series) = p.get("probe") else {
            return Err(Failure::BadRequest(format!(
                "give probe=SERIES; this board's series: {}",
                names.iter().map(|n| crate::report::shown(n)).collect::<Vec<_>>().join(", ")
            )));
        };
        if rows.is_empty() && store.count(&Filter { board: Some(name.clone()), ..Filter::default() }).map_err(Failure::from)? == 0
        {
            return Err(Failure::NotFound(format!("no board '{}' in the store", crate::report::shown(&name))));
        }
        if !names.contains(series) {
            // Not on this page: a series none of the board's newest runs (under the same
            // conditions) has is a mistake, named, never an empty answer.
            let newest = crate::store::FIGURES_MAX;
            // (the board's runs, whatever the view: a view that matches no run does not make a
            // series unknown)
            let wider = Filter { board: Some(name.clone()), newest: Some(newest as u64), ..Filter::default() };
            let ids: Vec<i64> = store.list(&wider).map_err(Failure::from)?.iter().map(|r| r.id).collect();
            let known: std::collections::BTreeSet<String> = store
                .figures(&ids)
                .map_err(Failure::from)?
                .into_values()
                .flat_map(|f| f.series.into_iter().map(|s| s.series))
                .collect();
            if !known.contains(series) {
                return Err(Failure::BadRequest(format!(
                    "no series '{}' on board '{}'{}; its series: {}",
                    crate::report::shown(series),
                    crate::report::shown(&name),
                    if ids.len() == newest { format!(" (in its newest {newest} runs)") } else { String::new() },
                    if known.is_empty() {
                        "none".to_string()
                    } else {
                        known.iter().map(|n| crate::report::shown(n)).collect::<Vec<_>>().join(", ")
                    }
                )));
            }
        }
        let points: Vec<serde_json::Value> = rows
            .iter()
            .filter_map(|r| {
                let s = figures.get(&r.id)?.series.iter().find(|s| s.series == series)?;
                Some(serde_json::json!({
                    "run": r.id, "uuid": r.uuid, "started_at": r.started_at, "kernel": r.kernel,
                    "scenario": r.scenario, "label": r.label, "samples": s.samples, "missed": s.missed,
                    "p99_ns": s.p99_ns, "p999_ns": s.p999_ns, "max_ns": s.max_ns,
                    "day_level_ns": s.day_level_ns, "day_low_ns": s.day_low_ns, "day_high_ns": s.day_high_ns,
                    "forecast_note": s.forecast_note,
                }))
            })
            .collect();
        let next_before = (rows.len() as u64 == f.newest.unwrap_or(0)).then(|| rows.first().map(|r| r.id)).flatten();
        Answer::json(&serde_json::json!({ "board": name, "series": series, "points": points, "next_before": next_before }))
    })
    .await
}

async fn api_runs(State(s): State<Arc<Shared>>, RawQuery(q): RawQuery) -> Response {
    s.answer(move |store, _| {
        let p = Params::parse(q.as_deref())?;
        p.only(&["board", "kernel", "scenario", "label", "since", "until", "before", "limit", "verdict", "host"])?;
        let mut f = super::query::filter(&p.view()?)?;
        f.before_id = p.before()?;
        f.host = p.get("host").map(str::to_string);
        f.verdict = match p.get("verdict") {
            None => None,
            Some(v @ ("pass" | "fail" | "none")) => Some(v.to_string()),
            Some(v) => return Err(Failure::BadRequest(format!("verdict={}: give pass, fail or none", crate::report::shown(v)))),
        };
        let limit = p.number("limit", 1..=PAGE_ROWS, 100)?;
        f.newest = Some(limit);
        let mut rows = store.list(&f).map_err(Failure::from)?;
        rows.reverse();
        let next_before = (rows.len() as u64 == limit).then(|| rows.last().map(|r| r.id)).flatten();
        Answer::json(&serde_json::json!({ "runs": rows, "next_before": next_before }))
    })
    .await
}

async fn run(State(s): State<Arc<Shared>>, Path(run): Path<String>, RawQuery(q): RawQuery) -> Response {
    s.answer(move |store, shown| {
        Params::parse(q.as_deref())?.only(&[])?;
        let n = data::named(store, &run)?;
        let page = crate::report::html::render(std::slice::from_ref(&n)).map_err(|e| Failure::Store(e.into()))?;
        let board = crate::store::row_of(&n.result).board;
        let trail = [("Fleet".to_string(), "/".to_string()), (board.clone(), format!("/board/{}", percent(&board)))];
        Ok(Answer::Html(pages::with_nav(&page, shown, &trail).into_string()))
    })
    .await
}

async fn api_run(State(s): State<Arc<Shared>>, Path(run): Path<String>, RawQuery(q): RawQuery) -> Response {
    s.answer(move |store, _| {
        Params::parse(q.as_deref())?.only(&[])?;
        Answer::json(&data::named(store, &run)?.result)
    })
    .await
}

/// The runs `runs=` names (2 to [`COMPARE_RUNS`], each once), read whole.
fn compared(store: &crate::store::Store, q: Option<&str>) -> Result<Vec<crate::report::html::Named>, Failure> {
    let p = Params::parse(q)?;
    p.only(&["runs"])?;
    let names = p.all("runs");
    if names.len() < 2 || names.len() > COMPARE_RUNS {
        return Err(Failure::BadRequest(format!(
            "compare takes 2 to {COMPARE_RUNS} runs, e.g. /compare?runs=12,15 (it was given {})",
            names.len()
        )));
    }
    let mut runs: Vec<crate::report::html::Named> = Vec::new();
    for name in &names {
        let n = data::named(store, name)?;
        if !runs.iter().any(|r| r.id == n.id) {
            runs.push(n);
        }
    }
    if runs.len() < 2 {
        return Err(Failure::BadRequest("these name one run only; compare needs two or more".into()));
    }
    Ok(runs)
}

/// The comparison of the runs `runs=` names, as `rtgauge compare` makes it without options.
fn comparison(
    store: &crate::store::Store,
    q: Option<&str>,
) -> Result<(Vec<crate::report::html::Named>, compare::Comparison), Failure> {
    let runs = compared(store, q)?;
    let o = compare::Options::parse(None, None, None, &[]).map_err(|e| Failure::Store(e.to_string()))?;
    let c = compare::compare(&runs, &o, &|r: &crate::result::RunResult| store.kernel_config_of(r).map_err(String::from))
        .map_err(|e| Failure::BadRequest(e.to_string()))?;
    Ok((runs, c))
}

async fn compare_page(State(s): State<Arc<Shared>>, RawQuery(q): RawQuery) -> Response {
    s.answer(move |store, shown| {
        let (runs, c) = comparison(store, q.as_deref())?;
        let page = compare::html(&runs, &c).map_err(|e| Failure::Store(e.into()))?;
        Ok(Answer::Html(pages::with_nav(&page, shown, &[("Fleet".to_string(), "/".to_string())]).into_string()))
    })
    .await
}

async fn api_compare(State(s): State<Arc<Shared>>, RawQuery(q): RawQuery) -> Response {
    s.answer(move |store, _| {
        let (_, c) = comparison(store, q.as_deref())?;
        Answer::json(&c)
    })
    .await
}
