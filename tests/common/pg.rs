//! A throw-away PostgreSQL cluster for the store's tests: Debian's server (`initdb` + `pg_ctl`
//! from /usr/lib/postgresql/*/bin, or `RTGAUGE_PG_BIN`), started as the `postgres` user when
//! the tests run as root, in a temporary directory, on a free port of 127.0.0.1 and a socket
//! in that directory, with password (SCRAM) authentication everywhere and TLS (a self-signed
//! certificate for `localhost`). One cluster per test binary ([`shared`]), started by the first
//! test that asks; a guard process (in a session of its own, so a time-out that kills the
//! tests' process group does not take it along) stops it and removes its directory once the
//! test binary has exited, however it ended. Each test takes a database of its own
//! ([`Cluster::database`]).
//!
//! Where PostgreSQL is not installed the tests print SKIPPED and pass without testing; under CI
//! (`CI` set) that is a failure: `.ci/run` installs it.

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::OnceLock;

/// The password of the cluster's superuser (`postgres`) and of the tests' role.
pub const SUPER_PASSWORD: &str = "super-Secret-4711";
/// The role that logs in with a client certificate (TLS, `cert` authentication) and no password.
pub const CERT_ROLE: &str = "rtgcert";
/// The role the tests connect as (not a superuser), and its password.
pub const ROLE: &str = "rtg";
pub const ROLE_PASSWORD: &str = "rtg-Pa55word:with@odd/chars";

/// A running cluster.
pub struct Cluster {
    dir: PathBuf,
    bin: PathBuf,
    pub port: u16,
    /// The server's options (`pg_ctl -o`), to start it again.
    options: String,
    /// Whether this value stops the cluster when dropped (a cluster of its own; the shared one
    /// is stopped by its guard).
    owned: bool,
}

static SHARED: OnceLock<Option<Cluster>> = OnceLock::new();
static DATABASES: AtomicUsize = AtomicUsize::new(0);

/// The test binary's cluster, started on first use; `None` (a note printed) where PostgreSQL
/// is not installed, outside CI.
pub fn shared() -> Option<&'static Cluster> {
    SHARED
        .get_or_init(|| match Cluster::start(false) {
            Ok(c) => Some(c),
            Err(e) => skip(&e),
        })
        .as_ref()
}

/// A cluster of the test's own (one it may stop and start), removed when dropped; `None` as
/// for [`shared`].
pub fn own() -> Option<Cluster> {
    match Cluster::start(true) {
        Ok(c) => Some(c),
        Err(e) => skip(&e),
    }
}

fn skip(why: &str) -> Option<Cluster> {
    super::skip(super::Skip::Missing, &format!("the PostgreSQL store's tests (PostgreSQL cannot start here): {why}"));
    None
}

/// Where Debian's server binaries are: `RTGAUGE_PG_BIN`, else the newest
/// /usr/lib/postgresql/N/bin with an initdb.
fn bin_dir() -> Result<PathBuf, String> {
    if let Some(b) = std::env::var_os("RTGAUGE_PG_BIN").filter(|b| !b.is_empty()) {
        return Ok(PathBuf::from(b));
    }
    let mut found: Vec<(u32, PathBuf)> = std::fs::read_dir("/usr/lib/postgresql")
        .map_err(|_| "PostgreSQL is not installed (no /usr/lib/postgresql; apt-get install postgresql)".to_string())?
        .flatten()
        .filter_map(|e| Some((e.file_name().to_str()?.parse().ok()?, e.path().join("bin"))))
        .filter(|(_, b)| b.join("initdb").exists())
        .collect();
    found.sort();
    found.pop().map(|(_, b)| b).ok_or_else(|| "no /usr/lib/postgresql/*/bin/initdb (apt-get install postgresql)".into())
}

fn is_root() -> bool {
    rustix::process::geteuid().is_root()
}

/// The uid and gid of the `postgres` user.
fn postgres_ids() -> Result<(u32, u32), String> {
    let id = |flag: &str| -> Result<u32, String> {
        let out = Command::new("id").args([flag, "postgres"]).output().map_err(|e| format!("id: {e}"))?;
        String::from_utf8_lossy(&out.stdout).trim().parse().map_err(|_| "there is no user postgres".to_string())
    };
    Ok((id("-u")?, id("-g")?))
}

/// A command that runs as the `postgres` user when the tests run as root.
fn as_server_user(program: &Path) -> Command {
    if is_root() {
        let mut c = Command::new("setpriv");
        c.args(["--reuid=postgres", "--regid=postgres", "--init-groups", "--"]).arg(program);
        c
    } else {
        Command::new(program)
    }
}

fn run(mut c: Command, what: &str) -> Result<(), String> {
    let out = c.stdin(Stdio::null()).output().map_err(|e| format!("{what}: {e}"))?;
    if out.status.success() {
        return Ok(());
    }
    Err(format!(
        "{what} failed ({}): {}{}",
        out.status,
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    ))
}

impl Cluster {
    fn start(owned: bool) -> Result<Cluster, String> {
        let bin = bin_dir()?;
        let dir = tempfile::Builder::new()
            .prefix("rtgauge-pg-")
            .tempdir_in("/tmp")
            .map_err(|e| format!("a temporary directory: {e}"))?
            .keep();
        let give = |p: &Path| -> Result<(), String> {
            if is_root() {
                let (uid, gid) = postgres_ids()?;
                std::os::unix::fs::chown(p, Some(uid), Some(gid)).map_err(|e| format!("chown {}: {e}", p.display()))?;
            }
            Ok(())
        };
        give(&dir)?;
        let pwfile = dir.join("pw");
        std::fs::write(&pwfile, SUPER_PASSWORD).map_err(|e| e.to_string())?;
        give(&pwfile)?;
        let mut initdb = as_server_user(&bin.join("initdb"));
        initdb.arg("-D").arg(dir.join("data")).args(["-U", "postgres", "-A", "scram-sha-256", "-E", "UTF8", "--locale=C", "-N"]);
        initdb.arg(format!("--pwfile={}", pwfile.display()));
        run(initdb, "initdb")?;
        // TLS: a certificate for localhost from a CA of the cluster's own, where openssl is there
        // to make them.
        let tls = make_certificates(&dir);
        if tls {
            for f in ["server.key", "server.crt"] {
                give(&dir.join(f))?;
                std::fs::set_permissions(dir.join(f), std::os::unix::fs::PermissionsExt::from_mode(0o600))
                    .map_err(|e| e.to_string())?;
            }
            give(&dir.join("ca.crt"))?;
            // CERT_ROLE logs in by its client certificate alone, over TLS (the first line that
            // matches wins).
            let hba = dir.join("data/pg_hba.conf");
            let text = std::fs::read_to_string(&hba).map_err(|e| e.to_string())?;
            std::fs::write(&hba, format!("hostssl all {CERT_ROLE} 127.0.0.1/32 cert\n{text}")).map_err(|e| e.to_string())?;
        }
        let mut last = String::new();
        // A free port is found by binding port 0; another process may take it before the
        // server does: a few tries.
        for _ in 0..5 {
            let port = std::net::TcpListener::bind("127.0.0.1:0").and_then(|l| l.local_addr()).map_err(|e| e.to_string())?.port();
            let mut options = format!(
                "-k {} -p {port} -c listen_addresses=127.0.0.1 -c fsync=off -c synchronous_commit=off \
                 -c full_page_writes=off -c max_connections=150 -c shared_buffers=16MB",
                dir.display()
            );
            if tls {
                options += &format!(
                    " -c ssl=on -c ssl_cert_file={0}/server.crt -c ssl_key_file={0}/server.key -c ssl_ca_file={0}/ca.crt",
                    dir.display()
                );
            }
            let mut pg_ctl = as_server_user(&bin.join("pg_ctl"));
            pg_ctl.arg("-D").arg(dir.join("data")).arg("-l").arg(dir.join("log")).args(["-w", "-t", "60", "-s", "-o", &options]);
            pg_ctl.arg("start");
            match run(pg_ctl, "pg_ctl start") {
                Ok(()) => {
                    let c = Cluster { dir, bin, port, options, owned };
                    c.guard()?;
                    c.setup()?;
                    return Ok(c);
                }
                Err(e) => last = format!("{e} {}", std::fs::read_to_string(dir.join("log")).unwrap_or_default()),
            }
        }
        let _ = std::fs::remove_dir_all(&dir);
        Err(last)
    }

    /// Stops the cluster and removes its directory once this test binary has exited (a cluster
    /// of a test's own is stopped when dropped; this is for a test binary that was killed).
    fn guard(&self) -> Result<(), String> {
        let stop = format!(
            "while kill -0 {pid} 2>/dev/null; do sleep 0.2; done; {su} {pg_ctl} -D {dir}/data -m immediate -w -s stop; rm -rf {dir}",
            pid = std::process::id(),
            su = if is_root() { "setpriv --reuid=postgres --regid=postgres --init-groups --" } else { "" },
            pg_ctl = self.bin.join("pg_ctl").display(),
            dir = self.dir.display(),
        );
        Command::new("setsid")
            .args(["sh", "-c", &stop])
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .map(drop)
            .map_err(|e| format!("setsid: {e}"))
    }

    /// The tests' role.
    fn setup(&self) -> Result<(), String> {
        let mut c = self.superuser("postgres");
        c.batch_execute(&format!("CREATE ROLE {ROLE} LOGIN PASSWORD '{}'", ROLE_PASSWORD.replace('\'', "''")))
            .map_err(|e| format!("CREATE ROLE: {e}"))?;
        c.batch_execute(&format!("CREATE ROLE {CERT_ROLE} LOGIN")).map_err(|e| format!("CREATE ROLE: {e}"))
    }

    /// Whether the server offers TLS (openssl made its certificates).
    pub fn tls(&self) -> bool {
        self.dir.join("server.crt").exists()
    }

    /// The client certificate (for [`CERT_ROLE`], signed by the cluster's CA) and its key.
    pub fn client_certificate(&self) -> (PathBuf, PathBuf) {
        (self.dir.join("client.crt"), self.dir.join("client.key"))
    }

    /// The certificate of the CA that signed the server's (for `localhost`).
    pub fn certificate(&self) -> PathBuf {
        self.dir.join("ca.crt")
    }

    /// A client connected as the superuser to database `db` (over the socket, no TLS).
    pub fn superuser(&self, db: &str) -> postgres::Client {
        let mut c = postgres::Config::new();
        c.host_path(&self.dir).port(self.port).user("postgres").password(SUPER_PASSWORD).dbname(db);
        c.connect(postgres::NoTls).unwrap_or_else(|e| panic!("connecting as the superuser: {e}"))
    }

    /// A new, empty database owned by the tests' role (`owner` false: by the superuser, so the
    /// role may connect but not create tables in it); returns its name.
    pub fn database(&self, hint: &str, owner: bool) -> String {
        let n = DATABASES.fetch_add(1, Ordering::Relaxed);
        let clean: String = hint.chars().filter(|c| c.is_ascii_alphanumeric()).take(30).collect();
        let name = format!("t{n}_{}", clean.to_ascii_lowercase());
        let owner = if owner { ROLE } else { "postgres" };
        self.superuser("postgres")
            .batch_execute(&format!("CREATE DATABASE {name} OWNER {owner}"))
            .unwrap_or_else(|e| panic!("CREATE DATABASE {name}: {e}"));
        name
    }

    /// The URL of database `db` for `user` with `password` (written into the URL as it is; give
    /// it percent-encoded where it needs to be) over TCP, with `query` appended.
    pub fn url_as(&self, user: &str, password: Option<&str>, db: &str, query: &str) -> String {
        let password = password.map(|p| format!(":{}", encode(p))).unwrap_or_default();
        let query = if query.is_empty() { String::new() } else { format!("?{query}") };
        format!("postgres://{user}{password}@127.0.0.1:{}/{db}{query}", self.port)
    }

    /// The URL of database `db` for the tests' role.
    pub fn url(&self, db: &str) -> String {
        self.url_as(ROLE, Some(ROLE_PASSWORD), db, "")
    }

    /// The directory of the cluster (its socket, log and data), for a test that checks nothing of
    /// it is left.
    pub fn dir(&self) -> &Path {
        &self.dir
    }

    /// Stops the server (a cluster of the test's own).
    pub fn stop(&self) {
        let mut pg_ctl = as_server_user(&self.bin.join("pg_ctl"));
        pg_ctl.arg("-D").arg(self.dir.join("data")).args(["-m", "fast", "-w", "-s", "stop"]);
        run(pg_ctl, "pg_ctl stop").unwrap_or_else(|e| panic!("{e}"));
    }

    /// Starts the server again, on the same port (a cluster of the test's own, stopped).
    pub fn start_again(&self) {
        let mut pg_ctl = as_server_user(&self.bin.join("pg_ctl"));
        pg_ctl.arg("-D").arg(self.dir.join("data")).arg("-l").arg(self.dir.join("log"));
        pg_ctl.args(["-w", "-t", "60", "-s", "-o", &self.options, "start"]);
        run(pg_ctl, "pg_ctl start").unwrap_or_else(|e| panic!("{e}"));
    }
}

impl Drop for Cluster {
    fn drop(&mut self) {
        if self.owned {
            let mut pg_ctl = as_server_user(&self.bin.join("pg_ctl"));
            pg_ctl.arg("-D").arg(self.dir.join("data")).args(["-m", "immediate", "-w", "-s", "stop"]);
            let _ = run(pg_ctl, "pg_ctl stop");
            let _ = std::fs::remove_dir_all(&self.dir);
        }
    }
}

/// A CA (`ca.crt`) and, signed by it, the server's key and certificate for `localhost` and a
/// client's for [`CERT_ROLE`], in `dir`; false where openssl cannot make them.
fn make_certificates(dir: &Path) -> bool {
    let ec = ["-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:prime256v1", "-nodes"];
    let openssl = |args: &[&str]| {
        Command::new("openssl").args(args).current_dir(dir).stdin(Stdio::null()).output().is_ok_and(|o| o.status.success())
    };
    // A key and a certificate for `subject`, signed by the CA, with `extensions`: NAME.key, NAME.crt.
    let signed = |name: &str, subject: &str, extensions: &str| {
        let (key, csr, crt, ext) = (format!("{name}.key"), format!("{name}.csr"), format!("{name}.crt"), format!("{name}.ext"));
        std::fs::write(dir.join(&ext), extensions).is_ok()
            && openssl(&[&["req"][..], &ec, &["-subj", subject, "-keyout", &key, "-out", &csr]].concat())
            && openssl(&[
                "x509",
                "-req",
                "-in",
                &csr,
                "-CA",
                "ca.crt",
                "-CAkey",
                "ca.key",
                "-CAcreateserial",
                "-days",
                "2",
                "-extfile",
                &ext,
                "-out",
                &crt,
            ])
    };
    openssl(
        &[&["req", "-x509"][..], &ec, &["-days", "2", "-subj", "/CN=rtgauge test CA", "-keyout", "ca.key", "-out", "ca.crt"]]
            .concat(),
    ) && signed("server", "/CN=localhost", "subjectAltName=DNS:localhost\nbasicConstraints=critical,CA:FALSE\n")
        && signed("client", &format!("/CN={CERT_ROLE}"), "basicConstraints=critical,CA:FALSE\nextendedKeyUsage=clientAuth\n")
}

/// Percent-encodes what a URL's user part cannot hold as it is.
pub fn encode(s: &str) -> String {
    s.bytes()
        .map(|b| if b.is_ascii_alphanumeric() || b"-._~".contains(&b) { (b as char).to_string() } else { format!("%{b:02X}") })
        .collect()
}
