//! Secrets in text rtgauge keeps or shows: a PostgreSQL URL without its password, a command line
//! as a result records it (the URL's password and any `password=VALUE` taken out), and the
//! warning for a password written on the command line. Plain text in, plain text out: the
//! store, the importers and the command line use the same rules.

/// Whether `--db` names a PostgreSQL database rather than a SQLite file (the scheme in any case).
pub fn is_postgres_url(db: &str) -> bool {
    let starts = |scheme: &str| db.get(..scheme.len()).is_some_and(|s| s.eq_ignore_ascii_case(scheme));
    starts("postgres://") || starts("postgresql://")
}

/// The URL as it may be shown: without the password of its user part or a `password=` option.
pub fn redact_url(url: &str) -> String {
    let Some((scheme, rest)) = url.split_once("://") else { return url.chars().take(200).collect() };
    let (authority, tail) = rest.find(['/', '?']).map_or((rest, ""), |i| rest.split_at(i));
    let authority = match authority.rsplit_once('@') {
        Some((userinfo, hosts)) => format!("{}@{hosts}", userinfo.split(':').next().unwrap_or("")),
        None => authority.to_string(),
    };
    let tail = match tail.split_once('?') {
        Some((path, query)) => {
            let kept: Vec<&str> = query.split('&').filter(|p| !p.starts_with("password=")).collect();
            if kept.is_empty() {
                path.to_string()
            } else {
                format!("{path}?{}", kept.join("&"))
            }
        }
        None => tail.to_string(),
    };
    format!("{scheme}://{authority}{tail}")
}

/// A command line as the result records it: a PostgreSQL URL in it (`--db URL`, `--db=URL`)
/// without its password, and any `password=VALUE` written `password=***`.
pub fn scrub_command_line(args: Vec<String>) -> Vec<String> {
    args.into_iter()
        .map(|a| {
            let lower = a.to_ascii_lowercase();
            let a = match ["postgres://", "postgresql://"].iter().filter_map(|s| lower.find(s)).min() {
                Some(at) => format!("{}{}", &a[..at], redact_url(&a[at..])),
                None => a,
            };
            scrub_password_words(&a)
        })
        .collect()
}

/// The warning for a database password written on the command line (`--db
/// postgres://USER:PASSWORD@…` or `?password=`), which `ps` shows every local user for as long
/// as rtgauge runs; `None` when there is none.
pub fn password_on_command_line(args: impl Iterator<Item = String>) -> Option<String> {
    let given =
        args.filter(|a| is_postgres_url(a.trim_start_matches("--db="))).any(|a| scrub_command_line(vec![a.clone()])[0] != a);
    given.then(|| {
        "the database password written in --db is shown to every user of this machine (ps) while rtgauge runs; give \
         it in PGPASSWORD, ~/.pgpass (mode 0600) or a service file (PGSERVICE) instead (docs/security.md)"
            .to_string()
    })
}

/// `password=VALUE` (libpq's key/value form, a query) written `password=***`, wherever it is.
fn scrub_password_words(a: &str) -> String {
    let lower = a.to_ascii_lowercase();
    let mut out = String::with_capacity(a.len());
    let mut rest = 0;
    let mut from = 0;
    while let Some(found) = lower[from..].find("password=") {
        let value = from + found + "password=".len();
        let end = a[value..].find([' ', '&', '\t']).map_or(a.len(), |e| value + e);
        out.push_str(&a[rest..value]);
        out.push_str("***");
        rest = end;
        from = end;
    }
    out.push_str(&a[rest..]);
    out
}
