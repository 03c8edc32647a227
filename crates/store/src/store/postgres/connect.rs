//! Reaching the PostgreSQL server: the URL and libpq's defaults, service files and environment,
//! passwords (never shown), TLS with rustls, the deadlines of a connection, and errors said in
//! one line.

use super::*;
use crate::vocab::secrets::{is_postgres_url as is_url, redact_url as redact};

/// A connection that could not be made.
pub(super) enum Connect {
    /// What PostgreSQL (or the network) said.
    Pg(postgres::Error),
    /// Nothing within the connection's time-out.
    NoAnswer(Duration),
    /// The attempt could not be started.
    NoThread(String),
}

/// How long a whole connection (TCP, TLS, start-up, password exchange) may take unless the URL
/// says (`connect_timeout`): generous, for a server busy with many boards at once.
pub(super) const CONNECT_DEADLINE: Duration = Duration::from_secs(30);
/// How long a connection attempt waits for a host that does not answer, unless the URL says.
pub(super) const CONNECT_TIMEOUT: Duration = Duration::from_secs(10);
/// How long a write waits for data the server does not acknowledge (a dropped link).
pub(super) const TCP_USER_TIMEOUT: Duration = Duration::from_secs(60);
/// How long a write waits for a lock another session holds.
pub(super) const LOCK_TIMEOUT: &str = "10s";
/// Where libpq (Debian's) looks for the server when the URL names no host.
pub(super) const DEFAULT_SOCKET_DIR: &str = "/var/run/postgresql";

/// How the connection is encrypted (`sslmode`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum SslMode {
    Disable,
    Prefer,
    Require,
    VerifyCa,
    VerifyFull,
}

/// Not 0 once the command is being stopped by a signal (a run's SIGINT or SIGTERM): a
/// connection still being made is given up on at once.
pub(super) static GIVE_UP: std::sync::OnceLock<Arc<std::sync::atomic::AtomicUsize>> = std::sync::OnceLock::new();

/// Gives up on every connection being made once `signalled` is not 0 (the signal a run's
/// handlers record): a server that does not answer holds up no stop.
pub fn give_up_when(signalled: Arc<std::sync::atomic::AtomicUsize>) {
    let _ = GIVE_UP.set(signalled);
}

/// Where to connect and as whom, the password resolved; shown only as [`Target::shown`].
pub(super) struct Target {
    config: Config,
    tls: MakeRustlsConnect,
    /// The URL without its password.
    pub(super) shown: String,
    /// `HOST:PORT` (or the socket's directory), for messages.
    pub(super) at: String,
    pub(super) user: String,
    pub(super) dbname: String,
    /// The password, to scrub from any message that might echo it.
    secret: Option<String>,
    /// Why `~/.pgpass` was not read (it may be read by others, it is another user's).
    pgpass_note: Option<String>,
    /// How long the whole connection may take (the URL's `connect_timeout`, else
    /// [`CONNECT_DEADLINE`]).
    deadline: Duration,
}

impl Target {
    /// Parses a `postgres://` or `postgresql://` URL and resolves its password.
    pub(super) fn parse(url: &str) -> Result<Target, String> {
        let shown = redact(url);
        let bad = |why: &dyn std::fmt::Display| {
            format!("the database URL {shown} does not parse ({why}); write it as postgres://USER@HOST:PORT/DBNAME")
        };
        if !is_url(url) {
            return Err(bad(&"it does not begin with postgres:// or postgresql://"));
        }
        // (The scheme in lower case: POSTGRES:// is the same URL.)
        let lowered;
        let url = match url.split_once("://") {
            Some((scheme, rest)) if scheme.bytes().any(|b| b.is_ascii_uppercase()) => {
                lowered = format!("{}://{rest}", scheme.to_ascii_lowercase());
                lowered.as_str()
            }
            _ => url,
        };
        // What the URL leaves out comes from its service (`service=NAME` or PGSERVICE: the
        // service file) and then from libpq's environment variables (PGHOST, PGSSLMODE, ...).
        let merged = with_defaults(url).map_err(|e| format!("{e} (the database {shown})"))?;
        let url = merged.as_str();
        // sslmode, sslrootcert, sslcert and sslkey are rtgauge's to read (tokio-postgres knows
        // neither verify-* nor certificates); the rest goes to tokio-postgres as it is.
        let (base, query) = url.split_once('?').unwrap_or((url, ""));
        let (mut sslmode, mut rootcert, mut rest) = (SslMode::Prefer, None, Vec::new());
        let (mut client_cert, mut client_key) = (None, None);
        for pair in query.split('&').filter(|p| !p.is_empty()) {
            let (k, v) = pair.split_once('=').unwrap_or((pair, ""));
            match k {
                "sslmode" => {
                    sslmode = match v {
                        "disable" => SslMode::Disable,
                        "allow" | "prefer" => SslMode::Prefer,
                        "require" => SslMode::Require,
                        "verify-ca" => SslMode::VerifyCa,
                        "verify-full" => SslMode::VerifyFull,
                        _ => {
                            return Err(bad(&format_args!(
                                "sslmode={v}; give disable, prefer, require, verify-ca or verify-full"
                            )))
                        }
                    }
                }
                "sslrootcert" => rootcert = Some(percent_decode(v)),
                "sslcert" => client_cert = Some(percent_decode(v)),
                "sslkey" => client_key = Some(percent_decode(v)),
                "connect_timeout"
                | "application_name"
                | "options"
                | "keepalives"
                | "keepalives_idle"
                | "tcp_user_timeout"
                | "target_session_attrs"
                | "load_balance_hosts"
                | "channel_binding"
                | "user"
                | "password"
                | "host"
                | "hostaddr"
                | "port"
                | "dbname"
                | "sslnegotiation" => rest.push(pair),
                _ => {
                    return Err(bad(&format_args!(
                        "'{k}' is not a parameter rtgauge knows; give service, sslmode, sslrootcert, sslcert, sslkey, \
                         connect_timeout, application_name, options, keepalives, tcp_user_timeout or target_session_attrs"
                    )))
                }
            }
        }
        // What the client library would only call "invalid": the port and the host, named.
        let authority = base.split_once("://").map_or("", |(_, r)| r).split('/').next().unwrap_or("");
        let hostport = authority.rsplit_once('@').map_or(authority, |(_, h)| h);
        for one in hostport.split(',').filter(|h| !h.starts_with('[')) {
            if let Some((host, port)) = one.rsplit_once(':') {
                if port.parse::<u16>().map_or(true, |p| p == 0) {
                    return Err(bad(&format_args!("the port '{port}' is not a port number (1-65535)")));
                }
                if host.is_empty() {
                    return Err(bad(&format_args!("it names a port but no host")));
                }
            }
        }
        let rebuilt = if rest.is_empty() { base.to_string() } else { format!("{base}?{}", rest.join("&")) };
        let mut config: Config = rebuilt.parse().map_err(|e: postgres::Error| bad(&e))?;
        // libpq: sslrootcert=system checks against the system's roots, and means verify-full
        // unless a mode is given.
        if rootcert.as_deref() == Some("system") && !query.split('&').any(|p| p.starts_with("sslmode=")) {
            sslmode = SslMode::VerifyFull;
        }
        if config.get_hosts().is_empty() && config.get_hostaddrs().is_empty() {
            config.host_path(DEFAULT_SOCKET_DIR);
        }
        let deadline = config.get_connect_timeout().copied().unwrap_or(CONNECT_DEADLINE);
        if config.get_connect_timeout().is_none() {
            config.connect_timeout(CONNECT_TIMEOUT);
        }
        if config.get_tcp_user_timeout().is_none() {
            config.tcp_user_timeout(TCP_USER_TIMEOUT);
        }
        if config.get_application_name().is_none() {
            config.application_name("rtgauge");
        }
        config.ssl_mode(match sslmode {
            SslMode::Disable => postgres::config::SslMode::Disable,
            SslMode::Prefer => postgres::config::SslMode::Prefer,
            _ => postgres::config::SslMode::Require,
        });
        let user = match config.get_user() {
            Some(u) => u.to_string(),
            None => {
                let u = std::env::var("PGUSER").ok().filter(|u| !u.is_empty()).or_else(|| whoami::username().ok());
                let u = u.ok_or_else(|| bad(&"it names no user, and neither PGUSER nor the system says who you are"))?;
                config.user(&u);
                u
            }
        };
        let dbname = config.get_dbname().unwrap_or(&user).to_string();
        let host = match config.get_hosts().first() {
            Some(postgres::config::Host::Tcp(h)) => h.clone(),
            Some(postgres::config::Host::Unix(p)) => p.display().to_string(),
            None => config.get_hostaddrs().first().map(|a| a.to_string()).unwrap_or_default(),
        };
        let port = config.get_ports().first().copied().unwrap_or(5432);
        let at = if host.starts_with('/') { format!("{host} (port {port})") } else { format!("{host}:{port}") };
        let mut pgpass_note = None;
        let secret = match config.get_password() {
            Some(p) => Some(String::from_utf8_lossy(p).into_owned()),
            None => {
                let from_env = std::env::var("PGPASSWORD").ok().filter(|p| !p.is_empty());
                let found = from_env.or_else(|| match pgpass(&host, port, &dbname, &user) {
                    Ok(p) => p,
                    Err(note) => {
                        pgpass_note = Some(note);
                        None
                    }
                });
                if let Some(p) = &found {
                    config.password(p);
                }
                found
            }
        };
        // (no certificate where nothing is encrypted)
        let client = match sslmode {
            SslMode::Disable => None,
            _ => client_identity(client_cert.as_deref(), client_key.as_deref())
                .map_err(|e| format!("{e} (the database {shown})"))?,
        };
        let tls = tls_config(sslmode, rootcert.as_deref(), client).map_err(|e| format!("{e} (the database {shown})"))?;
        Ok(Target { config, tls, shown, at, user, dbname, secret, pgpass_note, deadline })
    }

    /// Connects, logged in, within the URL's `connect_timeout` as libpq counts it (else within
    /// [`CONNECT_DEADLINE`]): the whole connection (TCP, TLS, the start-up and the password
    /// exchange), not only the TCP connect —
    /// a host that takes the connection and then says nothing (a hung server, a proxy with
    /// nothing behind it, another service on the port) is given up on in time. The attempt runs
    /// on a thread of its own, which is left behind, blocked, when it does not end in time.
    pub(super) fn connect(&self) -> Result<Client, Connect> {
        let (config, tls) = (self.config.clone(), self.tls.clone());
        let limit = self.deadline;
        let (tx, rx) = std::sync::mpsc::sync_channel(1);
        std::thread::Builder::new()
            .name("rtgauge-pg-connect".into())
            .spawn(move || {
                let _ = tx.send(config.connect(tls));
            })
            .map_err(|e| Connect::NoThread(e.to_string()))?;
        // Waited for in short steps: a signal that stops the command (see [`give_up_when`])
        // ends the wait at once, as a server that did not answer.
        let start = std::time::Instant::now();
        loop {
            let left = limit.saturating_sub(start.elapsed());
            match rx.recv_timeout(left.min(Duration::from_millis(50))) {
                Ok(connected) => return connected.map_err(Connect::Pg),
                Err(std::sync::mpsc::RecvTimeoutError::Disconnected) => return Err(Connect::NoAnswer(limit)),
                Err(std::sync::mpsc::RecvTimeoutError::Timeout) => {
                    let stopped = GIVE_UP.get().is_some_and(|f| f.load(std::sync::atomic::Ordering::Relaxed) != 0);
                    if stopped || start.elapsed() >= limit {
                        return Err(Connect::NoAnswer(limit));
                    }
                }
            }
        }
    }

    /// [`Target::error`] for a connection that failed.
    /// A connection made again that failed, typed as [`Target::failed`] types an operation's
    /// failure: no answer in time is the server away.
    pub(super) fn connect_failed(&self, doing: &str, e: &Connect) -> StoreError {
        match e {
            Connect::Pg(e) => self.failed(doing, e),
            Connect::NoAnswer(_) => StoreError::Away(self.connect_error(doing, e)),
            Connect::NoThread(_) => StoreError::Failed(self.connect_error(doing, e)),
        }
    }

    pub(super) fn connect_error(&self, doing: &str, e: &Connect) -> String {
        match e {
            Connect::Pg(e) => self.error(doing, e),
            Connect::NoAnswer(limit) => format!(
                "the host at {} took the connection but did not answer as PostgreSQL within {} s (connect_timeout); \
                 check that --db names a PostgreSQL server (host and port) and that it is not hung",
                self.at,
                limit.as_secs_f64()
            ),
            Connect::NoThread(e) => format!("connecting to {}: no thread for it ({e})", self.at),
        }
    }

    /// A PostgreSQL error as one line naming the problem and what to do, while `doing`
    /// (e.g. "storing the run"); never with the password in it.
    /// An operation's failure, typed: the server away (it may answer later), a refusal from
    /// the server, or another failure; said as [`Target::error`] says it.
    pub(super) fn failed(&self, doing: &str, e: &postgres::Error) -> StoreError {
        let text = self.error(doing, e);
        // The server's own failures, for now (insufficient resources, an operator's
        // intervention, a transaction rolled back) are no refusal.
        let transient = e.code().is_some_and(|c| ["53", "57", "40"].iter().any(|class| c.code().starts_with(class)));
        if e.is_closed() || away(e) {
            StoreError::Away(text)
        } else if e.as_db_error().is_some() && !transient {
            StoreError::Refused(text)
        } else {
            StoreError::Failed(text)
        }
    }

    pub(super) fn error(&self, doing: &str, e: &postgres::Error) -> String {
        let (shown, at, user, db) = (&self.shown, &self.at, &self.user, &self.dbname);
        let text = match e.as_db_error() {
            Some(d) => {
                let m = d.message();
                match *d.code() {
                    SqlState::INVALID_PASSWORD => format!(
                        "PostgreSQL at {at} refused the password of user {user} ({m}); give the right one in PGPASSWORD, \
                         ~/.pgpass or the URL"
                    ),
                    SqlState::INVALID_AUTHORIZATION_SPECIFICATION => format!(
                        "PostgreSQL at {at} does not let user {user} into the database {db} ({m}); allow it in the \
                         server's pg_hba.conf, or give another user in --db"
                    ),
                    SqlState::INVALID_CATALOG_NAME => {
                        format!("there is no database {db} at {at}; create it (createdb -O {user} {db}) or name another in --db")
                    }
                    SqlState::INSUFFICIENT_PRIVILEGE => format!(
                        "user {user} {} {doing} in the database {db} at {at} ({m}); have its owner grant it, or \
                         give another database with --db",
                        // "may not create ...", "lacks a right needed for storing ..."
                        if doing.split(' ').next().is_some_and(|w| w.ends_with("ing")) {
                            "lacks a right needed for"
                        } else {
                            "may not"
                        }
                    ),
                    SqlState::READ_ONLY_SQL_TRANSACTION => format!(
                        "the database {db} at {at} is read-only (a standby?) and cannot take the run; give the \
                         primary's URL with --db"
                    ),
                    SqlState::DISK_FULL | SqlState::OUT_OF_MEMORY | SqlState::PROGRAM_LIMIT_EXCEEDED => {
                        format!("the PostgreSQL server at {at} cannot take the run ({m}); free room on it, or give another --db")
                    }
                    SqlState::LOCK_NOT_AVAILABLE => format!(
                        "the database {db} at {at} is locked by another session (waited {LOCK_TIMEOUT}); let it \
                         finish, or give another --db"
                    ),
                    SqlState::ADMIN_SHUTDOWN | SqlState::CRASH_SHUTDOWN | SqlState::CANNOT_CONNECT_NOW => format!(
                        "the PostgreSQL server at {at} is shutting down or starting ({m}) while {doing}; try again when \
                         it is up"
                    ),
                    SqlState::TOO_MANY_CONNECTIONS => {
                        format!("the PostgreSQL server at {at} takes no more connections ({m}); try again later")
                    }
                    _ => format!("the database {shown}: {m} (while {doing})"),
                }
            }
            None if e.is_closed() => format!(
                "the connection to PostgreSQL at {at} was lost while {doing}; check the network and the server, then \
                 try again"
            ),
            None => {
                let chain = chain(e);
                let io = std::error::Error::source(e).and_then(|s| s.downcast_ref::<std::io::Error>());
                match io.map(std::io::Error::kind) {
                    Some(std::io::ErrorKind::ConnectionRefused) => format!(
                        "nothing answers at {at} (connection refused); check that PostgreSQL runs there and the host \
                         and port in --db"
                    ),
                    Some(std::io::ErrorKind::TimedOut) => {
                        format!("the host at {at} does not answer ({chain}); check the network and the host and port in --db")
                    }
                    Some(std::io::ErrorKind::NotFound) if at.starts_with('/') => {
                        format!("no PostgreSQL server listens in {at}; give its host in --db (postgres://USER@HOST:PORT/DBNAME)")
                    }
                    Some(
                        std::io::ErrorKind::UnexpectedEof | std::io::ErrorKind::ConnectionReset | std::io::ErrorKind::BrokenPipe,
                    ) => {
                        format!("the connection to PostgreSQL at {at} was lost while {doing} ({chain}); try again")
                    }
                    _ if chain.contains("password missing") => {
                        let note = self.pgpass_note.as_deref().map(|n| format!(" ({n})")).unwrap_or_default();
                        format!(
                            "PostgreSQL at {at} asks user {user} for a password and none was given{note}; set \
                             PGPASSWORD, or add a line HOST:PORT:DBNAME:USER:PASSWORD to ~/.pgpass (mode 0600)"
                        )
                    }
                    _ if chain.contains("lookup address") || chain.contains("Name or service not known") => {
                        format!("the host of {shown} is not known ({chain}); check its name in --db")
                    }
                    _ if chain.contains("does not support TLS") => format!(
                        "the server at {at} does not offer TLS, which the URL's sslmode asks for; enable ssl on the \
                         server, or give sslmode=prefer"
                    ),
                    _ if chain.contains("certificate") || chain.contains("Certificate") => format!(
                        "the server at {at} is not trusted ({chain}); install its CA in the system's roots or give \
                         sslrootcert=PATH in --db"
                    ),
                    _ => format!("the database {shown}: {chain} (while {doing})"),
                }
            }
        };
        self.scrub(text)
    }

    /// A message with the password, should anything have echoed it, cut out.
    fn scrub(&self, text: String) -> String {
        match self.secret.as_deref().filter(|s| s.len() >= 3) {
            Some(s) if text.contains(s) => text.replace(s, "********"),
            _ => text,
        }
    }
}

/// An error and its causes, as one line.
pub(super) fn chain(e: &dyn std::error::Error) -> String {
    let mut s = e.to_string();
    let mut source = e.source();
    while let Some(c) = source {
        let t = c.to_string();
        if !s.contains(&t) {
            s += &format!(": {t}");
        }
        source = c.source();
    }
    s.replace(['\n', '\r'], " ")
}

/// The database a URL names, as `USER@HOST:PORT/DBNAME` — the host in lower case, the default
/// port, user and database written out, the password and every option left out — so that two
/// spellings of one database are known as one (the spool's name); `None` when it does not parse.
pub fn destination_of(url: &str) -> Option<String> {
    let t = Target::parse(url).ok()?;
    Some(format!("{}@{}/{}", t.user, t.at.to_lowercase(), t.dbname))
}

/// `%XX` sequences decoded (a query value).
pub(super) fn percent_decode(s: &str) -> String {
    let b = s.as_bytes();
    let mut out = Vec::with_capacity(b.len());
    let mut i = 0;
    while i < b.len() {
        let hex = |c: u8| (c as char).to_digit(16);
        match (b[i], b.get(i + 1).copied().and_then(hex), b.get(i + 2).copied().and_then(hex)) {
            (b'%', Some(h), Some(l)) => {
                out.push((h * 16 + l) as u8);
                i += 3;
            }
            (c, _, _) => {
                out.push(c);
                i += 1;
            }
        }
    }
    String::from_utf8_lossy(&out).into_owned()
}

/// The password for (host, port, dbname, user) in `PGPASSFILE` or `~/.pgpass`, looked up as
/// libpq does: lines `hostname:port:database:username:password`, `*` matching anything, `\:`
/// and `\\` escapes, the first matching line wins; a socket directory matches `localhost`.
/// `Err` says why the file was not read (not the user's, or readable by others): libpq ignores
/// such a file too.
pub(super) fn pgpass(host: &str, port: u16, dbname: &str, user: &str) -> Result<Option<String>, String> {
    use std::os::unix::fs::MetadataExt;
    let path = match std::env::var_os("PGPASSFILE").filter(|p| !p.is_empty()) {
        Some(p) => std::path::PathBuf::from(p),
        None => match std::env::var_os("HOME").filter(|h| !h.is_empty()) {
            Some(h) => std::path::Path::new(&h).join(".pgpass"),
            None => return Ok(None),
        },
    };
    let shown = path.display();
    let Ok(meta) = std::fs::metadata(&path) else { return Ok(None) };
    if !meta.is_file() {
        return Err(format!("{shown} is not a file"));
    }
    if meta.uid() != rustix::process::geteuid().as_raw() {
        return Err(format!("{shown} is ignored: it belongs to another user"));
    }
    if meta.mode() & 0o077 != 0 {
        return Err(format!("{shown} is ignored: others may read it (mode {:04o}); chmod 600 it", meta.mode() & 0o7777));
    }
    let text = std::fs::read_to_string(&path).map_err(|e| format!("{shown} cannot be read: {e}"))?;
    Ok(pgpass_match(&text, host, port, dbname, user))
}

/// The password of the first line of a `.pgpass` text that matches.
pub(super) fn pgpass_match(text: &str, host: &str, port: u16, dbname: &str, user: &str) -> Option<String> {
    let port = port.to_string();
    for line in text.lines() {
        if line.trim_start().starts_with('#') || line.trim().is_empty() {
            continue;
        }
        let fields = pgpass_fields(line);
        let [h, p, d, u, password] = fields.as_slice() else { continue };
        let host_ok = h == "*" || h == host || (host.starts_with('/') && h == "localhost");
        if host_ok && (p == "*" || *p == port) && (d == "*" || d == dbname) && (u == "*" || u == user) {
            return Some(password.clone());
        }
    }
    None
}

/// A `.pgpass` line split at its unescaped colons into at most five fields (the password takes
/// the rest), escapes undone.
pub(super) fn pgpass_fields(line: &str) -> Vec<String> {
    let mut fields = vec![String::new()];
    let mut chars = line.chars();
    while let Some(c) = chars.next() {
        match c {
            '\\' => fields.last_mut().into_iter().for_each(|f| f.extend(chars.next())),
            ':' if fields.len() < 5 => fields.push(String::new()),
            _ => fields.last_mut().into_iter().for_each(|f| f.push(c)),
        }
    }
    fields
}

/// The parameters a URL's service or the environment may give (libpq's names), and the
/// environment variable of each (none: not taken from the environment).
pub(super) const DEFAULTS: &[(&str, Option<&str>)] = &[
    ("host", Some("PGHOST")),
    ("hostaddr", Some("PGHOSTADDR")),
    ("port", Some("PGPORT")),
    ("dbname", Some("PGDATABASE")),
    ("user", Some("PGUSER")),
    // (PGPASSWORD is read with ~/.pgpass, after: see Target::parse)
    ("password", None),
    ("sslmode", Some("PGSSLMODE")),
    ("sslrootcert", Some("PGSSLROOTCERT")),
    ("sslcert", Some("PGSSLCERT")),
    ("sslkey", Some("PGSSLKEY")),
    ("connect_timeout", Some("PGCONNECT_TIMEOUT")),
    ("application_name", Some("PGAPPNAME")),
    ("options", Some("PGOPTIONS")),
    ("target_session_attrs", Some("PGTARGETSESSIONATTRS")),
    ("keepalives", None),
    ("keepalives_idle", None),
    ("tcp_user_timeout", None),
    ("channel_binding", None),
    ("load_balance_hosts", None),
    ("sslnegotiation", None),
];

/// `url` with what it leaves out filled in as libpq does: first from its service — `service=`
/// in the URL, else `PGSERVICE` — read from `PGSERVICEFILE` or `~/.pg_service.conf`, else
/// `PGSYSCONFDIR/pg_service.conf` (`/etc/postgresql-common/pg_service.conf`), then from the
/// environment variables in [`DEFAULTS`]. A credential or a host then need not be on the command
/// line (where `ps` shows it to every user).
pub(super) fn with_defaults(url: &str) -> Result<String, String> {
    let (base, query) = url.split_once('?').unwrap_or((url, ""));
    let rest = base.split_once("://").map_or("", |(_, r)| r);
    let (authority, path) = rest.split_once('/').unwrap_or((rest, ""));
    let (userinfo, hostport) = authority.rsplit_once('@').unwrap_or(("", authority));
    let (mut service, mut pairs) = (None, Vec::new());
    for pair in query.split('&').filter(|p| !p.is_empty()) {
        match pair.split_once('=') {
            Some(("service", v)) => service = Some(percent_decode(v)),
            _ => pairs.push(pair.to_string()),
        }
    }
    let given = |key: &str, pairs: &[String]| {
        let in_url = match key {
            "user" => !userinfo.split(':').next().unwrap_or("").is_empty(),
            "password" => userinfo.contains(':'),
            "host" | "hostaddr" => !hostport.is_empty() && !hostport.starts_with(':'),
            "port" => {
                hostport.rsplit_once(':').is_some_and(|(h, p)| !p.contains(']') && !h.is_empty() || hostport.starts_with(':'))
            }
            "dbname" => !path.is_empty(),
            _ => false,
        };
        in_url || pairs.iter().any(|p| p.split('=').next() == Some(key))
    };
    let service = service.or_else(|| std::env::var("PGSERVICE").ok().filter(|s| !s.is_empty()));
    if let Some(name) = &service {
        for (k, v) in service_params(name)? {
            if !given(&k, &pairs) {
                pairs.push(format!("{k}={}", percent_encode(&v)));
            }
        }
    }
    for (key, var) in DEFAULTS {
        let Some(var) = var else { continue };
        if let Some(v) = std::env::var(var).ok().filter(|v| !v.is_empty()) {
            if !given(key, &pairs) {
                pairs.push(format!("{key}={}", percent_encode(&v)));
            }
        }
    }
    Ok(if pairs.is_empty() { base.to_string() } else { format!("{base}?{}", pairs.join("&")) })
}

/// `s` percent-encoded for a URL's query value.
pub(super) fn percent_encode(s: &str) -> String {
    s.bytes()
        .map(|b| if b.is_ascii_alphanumeric() || b"-._~".contains(&b) { (b as char).to_string() } else { format!("%{b:02X}") })
        .collect()
}

/// The parameters of service `name` in the first service file that has it (see
/// [`with_defaults`]). A file another user could have written is not believed: refused.
pub(super) fn service_params(name: &str) -> Result<Vec<(String, String)>, String> {
    let mut files = Vec::new();
    match std::env::var_os("PGSERVICEFILE").filter(|p| !p.is_empty()) {
        Some(f) => files.push(std::path::PathBuf::from(f)),
        None => files.extend(
            std::env::var_os("HOME").filter(|h| !h.is_empty()).map(|h| std::path::Path::new(&h).join(".pg_service.conf")),
        ),
    }
    let sysconf = std::env::var_os("PGSYSCONFDIR").filter(|p| !p.is_empty()).unwrap_or_else(|| "/etc/postgresql-common".into());
    files.push(std::path::Path::new(&sysconf).join("pg_service.conf"));
    for file in &files {
        let shown = file.display();
        let meta = match std::fs::metadata(file) {
            Ok(m) => m,
            Err(_) => continue,
        };
        if !meta.is_file() {
            return Err(format!("the service file {shown} is not a file"));
        }
        crate::sys::files::trusted(&meta).map_err(|why| {
            format!("the service file {shown} is not believed: {why}; make it root's or yours, writable by no one else")
        })?;
        let text = std::fs::read_to_string(file).map_err(|e| format!("the service file {shown} cannot be read: {e}"))?;
        if let Some(params) = service_section(&text, name) {
            use std::os::unix::fs::{MetadataExt, PermissionsExt};
            // A password there is a secret as in ~/.pgpass: not believed from a file others may read.
            if params.iter().any(|(k, _)| k == "password") && meta.mode() & 0o077 != 0 {
                return Err(format!(
                    "the service file {shown} holds a password and others may read it (mode {:04o}); chmod 600 it",
                    meta.permissions().mode() & 0o7777
                ));
            }
            let known = |k: &str| DEFAULTS.iter().any(|(d, _)| *d == k);
            if let Some((k, _)) = params.iter().find(|(k, _)| !known(k)) {
                return Err(format!("the service {name} in {shown} sets '{k}', which rtgauge does not take"));
            }
            return Ok(params);
        }
    }
    Err(format!(
        "the service '{name}' (service= or PGSERVICE) is in none of {}; add a section [{name}] to one",
        files.iter().map(|f| f.display().to_string()).collect::<Vec<_>>().join(", ")
    ))
}

/// The `key=value` lines of section `[name]` of a service file's text, as libpq reads them
/// (`#` comments, blank lines, spaces around the key and the value ignored).
pub(super) fn service_section(text: &str, name: &str) -> Option<Vec<(String, String)>> {
    let mut found: Option<Vec<(String, String)>> = None;
    for line in text.lines().map(str::trim).filter(|l| !l.is_empty() && !l.starts_with('#')) {
        if let Some(section) = line.strip_prefix('[').and_then(|l| l.strip_suffix(']')) {
            if found.is_some() {
                break;
            }
            if section.trim() == name {
                found = Some(Vec::new());
            }
            continue;
        }
        if let (Some(params), Some((k, v))) = (found.as_mut(), line.split_once('=')) {
            params.push((k.trim().to_string(), v.trim().to_string()));
        }
    }
    found
}

/// A client certificate and its key, as libpq finds them: `sslcert` and `sslkey` (URL, service
/// or PGSSLCERT/PGSSLKEY), else `~/.postgresql/postgresql.crt` and `.key` when both are there.
/// The key must be the user's (or root's) and readable by no one else, as libpq requires.
pub(super) type ClientIdentity =
    Option<(Vec<rustls::pki_types::CertificateDer<'static>>, rustls::pki_types::PrivateKeyDer<'static>)>;

pub(super) fn client_identity(cert: Option<&str>, key: Option<&str>) -> Result<ClientIdentity, String> {
    use rustls::pki_types::pem::PemObject;
    use std::os::unix::fs::MetadataExt;
    let home = std::env::var_os("HOME").filter(|h| !h.is_empty()).map(|h| std::path::PathBuf::from(h).join(".postgresql"));
    let (cert, key) = match (cert, key) {
        (Some(c), Some(k)) => (std::path::PathBuf::from(c), std::path::PathBuf::from(k)),
        (Some(c), None) => (std::path::PathBuf::from(c), home.clone().map(|h| h.join("postgresql.key")).unwrap_or_default()),
        (None, Some(k)) => (home.clone().map(|h| h.join("postgresql.crt")).unwrap_or_default(), std::path::PathBuf::from(k)),
        (None, None) => {
            let Some(h) = home else { return Ok(None) };
            let (c, k) = (h.join("postgresql.crt"), h.join("postgresql.key"));
            if !c.is_file() || !k.is_file() {
                return Ok(None);
            }
            (c, k)
        }
    };
    let meta = std::fs::metadata(&key)
        .map_err(|e| format!("the client key {} cannot be read ({e}); give sslkey=PATH", key.display()))?;
    let uid = rustix::process::geteuid().as_raw();
    if !meta.is_file() || (meta.uid() != uid && meta.uid() != 0) {
        return Err(format!("the client key {} is not a file of yours or root's; give sslkey=PATH of your own", key.display()));
    }
    if meta.mode() & 0o077 != 0 {
        return Err(format!(
            "the client key {} may be read by others (mode {:04o}); chmod 600 it",
            key.display(),
            meta.mode() & 0o7777
        ));
    }
    let certs = rustls::pki_types::CertificateDer::pem_file_iter(&cert)
        .and_then(|i| i.collect::<Result<Vec<_>, _>>())
        .map_err(|e| format!("the client certificate {} cannot be read ({e}); give sslcert=PATH (PEM)", cert.display()))?;
    if certs.is_empty() {
        return Err(format!("the client certificate {} holds no certificate; give sslcert=PATH (PEM)", cert.display()));
    }
    let private = rustls::pki_types::PrivateKeyDer::from_pem_file(&key)
        .map_err(|e| format!("the client key {} cannot be read ({e}); give sslkey=PATH (PEM)", key.display()))?;
    Ok(Some((certs, private)))
}

/// rustls' configuration for `mode`: the server's certificate checked against `rootcert` (a PEM
/// file, or `system`) or the system's roots for `verify-*`, not checked for `prefer`/`require`
/// (libpq's meaning: encrypted, whoever answers); `client`, the certificate rtgauge shows.
pub(super) fn tls_config(mode: SslMode, rootcert: Option<&str>, client: ClientIdentity) -> Result<MakeRustlsConnect, String> {
    use rustls::client::WebPkiServerVerifier;
    let provider = Arc::new(rustls::crypto::ring::default_provider());
    let builder = rustls::ClientConfig::builder_with_provider(provider.clone())
        .with_safe_default_protocol_versions()
        .map_err(|e| format!("TLS cannot be set up: {e}"))?;
    let config = match mode {
        SslMode::Disable | SslMode::Prefer | SslMode::Require => {
            authenticated(builder.dangerous().with_custom_certificate_verifier(Arc::new(Unchecked(provider))), client)?
        }
        SslMode::VerifyCa | SslMode::VerifyFull => {
            let mut roots = rustls::RootCertStore::empty();
            match rootcert.filter(|r| *r != "system") {
                Some(path) => {
                    use rustls::pki_types::pem::PemObject;
                    let certs = rustls::pki_types::CertificateDer::pem_file_iter(path)
                        .and_then(|i| i.collect::<Result<Vec<_>, _>>())
                        .map_err(|e| {
                            format!("the root certificates in {path} cannot be read ({e}); give a PEM file as sslrootcert")
                        })?;
                    roots.add_parsable_certificates(certs);
                }
                None => {
                    roots.add_parsable_certificates(rustls_native_certs::load_native_certs().certs);
                }
            }
            if roots.is_empty() {
                return Err(
                    "no root certificates to check the server with (none in the system's store); install ca-certificates, \
                     or give sslrootcert=PATH"
                        .into(),
                );
            }
            let inner = WebPkiServerVerifier::builder_with_provider(Arc::new(roots), provider.clone())
                .build()
                .map_err(|e| format!("TLS cannot be set up: {e}"))?;
            let verifier = Verified { inner, check_name: mode == SslMode::VerifyFull };
            authenticated(builder.dangerous().with_custom_certificate_verifier(Arc::new(verifier)), client)?
        }
    };
    Ok(MakeRustlsConnect::new(config))
}

/// The configuration with the client's certificate, if it has one.
pub(super) fn authenticated(
    builder: rustls::ConfigBuilder<rustls::ClientConfig, rustls::client::WantsClientCert>,
    client: ClientIdentity,
) -> Result<rustls::ClientConfig, String> {
    match client {
        Some((certs, key)) => builder.with_client_auth_cert(certs, key).map_err(|e| {
            format!("the client certificate or its key cannot be used ({e}); give sslcert= and sslkey= of one pair (PEM)")
        }),
        None => Ok(builder.with_no_client_auth()),
    }
}

/// `sslmode=prefer|require`: the certificate is not checked (libpq's meaning); the handshake's
/// signatures still are.
#[derive(Debug)]
pub(super) struct Unchecked(Arc<rustls::crypto::CryptoProvider>);

/// `sslmode=verify-ca|verify-full`: the chain checked against the roots; the name too for
/// verify-full.
#[derive(Debug)]
pub(super) struct Verified {
    inner: Arc<rustls::client::WebPkiServerVerifier>,
    check_name: bool,
}

pub(super) mod verifiers {
    use super::{Unchecked, Verified};
    use rustls::client::danger::{HandshakeSignatureValid, ServerCertVerified, ServerCertVerifier};
    use rustls::pki_types::{CertificateDer, ServerName, UnixTime};
    use rustls::{CertificateError, DigitallySignedStruct, Error, SignatureScheme};

    impl ServerCertVerifier for Unchecked {
        fn verify_server_cert(
            &self,
            _: &CertificateDer<'_>,
            _: &[CertificateDer<'_>],
            _: &ServerName<'_>,
            _: &[u8],
            _: UnixTime,
        ) -> Result<ServerCertVerified, Error> {
            Ok(ServerCertVerified::assertion())
        }
        fn verify_tls12_signature(
            &self,
            m: &[u8],
            c: &CertificateDer<'_>,
            d: &DigitallySignedStruct,
        ) -> Result<HandshakeSignatureValid, Error> {
            rustls::crypto::verify_tls12_signature(m, c, d, &self.0.signature_verification_algorithms)
        }
        fn verify_tls13_signature(
            &self,
            m: &[u8],
            c: &CertificateDer<'_>,
            d: &DigitallySignedStruct,
        ) -> Result<HandshakeSignatureValid, Error> {
            rustls::crypto::verify_tls13_signature(m, c, d, &self.0.signature_verification_algorithms)
        }
        fn supported_verify_schemes(&self) -> Vec<SignatureScheme> {
            self.0.signature_verification_algorithms.supported_schemes()
        }
    }

    impl ServerCertVerifier for Verified {
        fn verify_server_cert(
            &self,
            end: &CertificateDer<'_>,
            intermediates: &[CertificateDer<'_>],
            name: &ServerName<'_>,
            ocsp: &[u8],
            now: UnixTime,
        ) -> Result<ServerCertVerified, Error> {
            match self.inner.verify_server_cert(end, intermediates, name, ocsp, now) {
                Err(Error::InvalidCertificate(
                    CertificateError::NotValidForName | CertificateError::NotValidForNameContext { .. },
                )) if !self.check_name => Ok(ServerCertVerified::assertion()),
                other => other,
            }
        }
        fn verify_tls12_signature(
            &self,
            m: &[u8],
            c: &CertificateDer<'_>,
            d: &DigitallySignedStruct,
        ) -> Result<HandshakeSignatureValid, Error> {
            self.inner.verify_tls12_signature(m, c, d)
        }
        fn verify_tls13_signature(
            &self,
            m: &[u8],
            c: &CertificateDer<'_>,
            d: &DigitallySignedStruct,
        ) -> Result<HandshakeSignatureValid, Error> {
            self.inner.verify_tls13_signature(m, c, d)
        }
        fn supported_verify_schemes(&self) -> Vec<SignatureScheme> {
            self.inner.supported_verify_schemes()
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_url_is_shown_without_its_password() {
        assert_eq!(
            redact("postgres://rt:s3cret@db.lab:5433/runs?sslmode=require"),
            "postgres://rt@db.lab:5433/runs?sslmode=require"
        );
        assert_eq!(redact("postgresql://rt:p%40ss@h/db?password=x&sslmode=disable"), "postgresql://rt@h/db?sslmode=disable");
        assert_eq!(redact("postgres://h/db?password=x"), "postgres://h/db");
        assert_eq!(redact("postgres://u@h"), "postgres://u@h");
        assert_eq!(redact("postgres://u:pw@h"), "postgres://u@h");
    }

    #[test]
    fn pgpass_lines_match_as_libpq_reads_them() {
        let text = "# comment\n\
                    other:5432:*:rt:no\n\
                    db\\:lab:*:runs:rt:colon\\:in\\\\it\n\
                    *:5433:*:*:wild:card\n\
                    localhost:5432:runs:rt:sock\n";
        assert_eq!(pgpass_match(text, "db:lab", 5432, "runs", "rt").as_deref(), Some("colon:in\\it"));
        assert_eq!(pgpass_match(text, "anyhost", 5433, "x", "y").as_deref(), Some("wild:card"), "the password keeps its colons");
        assert_eq!(pgpass_match(text, "/var/run/postgresql", 5432, "runs", "rt").as_deref(), Some("sock"));
        assert_eq!(pgpass_match(text, "other", 5432, "runs", "nobody"), None);
    }

    #[test]
    fn a_url_parses_with_its_tls_mode_and_a_bad_one_says_how_to_write_it() {
        let e = Target::parse("postgres://rt:pw@127.0.0.1:5999/lab?sslmode=verify-ca&sslrootcert=/nonexistent").err();
        assert!(e.as_deref().is_some_and(|e| e.contains("sslrootcert") && !e.contains("pw@")), "{e:?}");
        let t = match Target::parse("postgresql://rt:pw@127.0.0.1:5999/lab?sslmode=require&connect_timeout=3") {
            Ok(t) => t,
            Err(e) => panic!("{e}"),
        };
        assert_eq!((t.at.as_str(), t.user.as_str(), t.dbname.as_str()), ("127.0.0.1:5999", "rt", "lab"));
        assert_eq!(t.shown, "postgresql://rt@127.0.0.1:5999/lab?sslmode=require&connect_timeout=3");
        let e = Target::parse("postgres://rt:pw@h/lab?sslmode=sometimes").err().unwrap_or_default();
        assert!(e.contains("sslmode=sometimes") && e.contains("postgres://USER@HOST:PORT/DBNAME") && !e.contains(":pw"), "{e}");
        let e = Target::parse("postgres://rt:pw@h:notaport/lab").err().unwrap_or_default();
        assert!(e.starts_with("the database URL postgres://rt@h:notaport/lab does not parse"), "{e}");
    }
}
