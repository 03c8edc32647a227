//! A run as the store keeps it, the same for both backends: its document compressed (JSON
//! serialised straight into zlib) and read back, its identity and figures read from a stored
//! document, its timelines as blobs of their own, its kernel configuration's options
//! compressed, the row `list` reads, and the rescue file of a run no store took.

use super::*;

/// The UUID a stored document says it has: its own `uuid`, else the one its import gives (from
/// the SHA-256 of the file, `imported.sha256`); the document as stored, JSON text or
/// zlib-compressed JSON. `None` when it says neither (or does not read).
pub(super) fn identity_of_document(bytes: &[u8]) -> Option<uuid::Uuid> {
    #[derive(serde::Deserialize)]
    struct Identity {
        uuid: Option<uuid::Uuid>,
        imported: Option<Imported>,
    }
    #[derive(serde::Deserialize)]
    struct Imported {
        sha256: Option<String>,
    }
    let text = bytes.first() == Some(&b'{');
    let id: Identity = if text {
        serde_json::from_slice(bytes).ok()?
    } else {
        let json = std::io::Read::take(flate2::read::ZlibDecoder::new(bytes), MAX_DOCUMENT);
        serde_json::from_reader(std::io::BufReader::new(json)).ok()?
    };
    id.uuid.or_else(|| crate::result::content_uuid_of_hex(id.imported?.sha256.as_deref()?))
}

/// The most a stored document may take once decompressed (a 24 h run on 64 CPUs is ~130 MB).
pub(super) const MAX_DOCUMENT: u64 = 1 << 30;

/// A result as the store keeps it: JSON serialised straight into a zlib compressor writing to
/// `out`; returns the compressed size.
pub(super) fn compress_into(r: &RunResult, out: &mut impl std::io::Write) -> std::io::Result<u64> {
    let mut counted = Counted { inner: out, bytes: 0 };
    let mut z = flate2::write::ZlibEncoder::new(&mut counted, flate2::Compression::fast());
    let mut w = std::io::BufWriter::with_capacity(64 * 1024, &mut z);
    serde_json::to_writer(&mut w, r)?;
    std::io::Write::flush(&mut w)?;
    drop(w);
    z.finish()?;
    Ok(counted.bytes)
}

/// A writer that counts what passes through it.
struct Counted<W> {
    inner: W,
    bytes: u64,
}

impl<W: std::io::Write> std::io::Write for Counted<W> {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        let n = self.inner.write(buf)?;
        self.bytes += n as u64;
        Ok(n)
    }
    fn flush(&mut self) -> std::io::Result<()> {
        self.inner.flush()
    }
}

/// A compressed document ([`compress_into`]) read back.
pub(super) fn decompress_document(blob: &[u8]) -> serde_json::Result<RunResult> {
    let json = std::io::Read::take(flate2::read::ZlibDecoder::new(blob), MAX_DOCUMENT);
    serde_json::from_reader(std::io::BufReader::new(json))
}

/// The figures ([`figures::figures_of`]) of a stored document (JSON text, or compressed as
/// [`compress_into`] writes it) but the forecasts', read for the parts they are made of alone
/// (its combined entries, verdict and board: not its phases, per-CPU entries and other parts);
/// a layout's migration fills them so for every run stored before (and the next layout's, the
/// forecasts': [`forecasts_of_document`]).
pub(super) fn figures_of_document(bytes: &[u8]) -> Result<figures::Figures, String> {
    #[derive(serde::Deserialize)]
    struct Parts {
        #[serde(default)]
        board: Option<crate::result::board::Board>,
        combined: Vec<crate::result::ProbeResult>,
        verdict: crate::result::Verdict,
    }
    // (Decompressed whole, then parsed: several times faster than parsing from a reader.)
    let mut json = Vec::new();
    let text = if bytes.first() == Some(&b'{') {
        bytes
    } else {
        let mut z = std::io::Read::take(flate2::read::ZlibDecoder::new(bytes), MAX_DOCUMENT);
        std::io::Read::read_to_end(&mut z, &mut json).map_err(|e| e.to_string())?;
        &json
    };
    let parts: Parts = serde_json::from_slice(text).map_err(|e| e.to_string())?;
    Ok(figures::figures_from(&parts.combined, &parts.verdict, parts.board.as_ref()))
}

/// The figures ([`figures::figures_of`]) of a stored document (JSON text, or compressed) read
/// whole, its timelines kept apart (`timelines`: entry and blob) put back: those its forecasts
/// are made from when it lacks them (a document of an older version). `None` when it or a
/// timeline does not read (`load` says what is wrong with it).
pub(super) fn forecasts_of_document(bytes: &[u8], timelines: &[(i64, Vec<u8>)]) -> Option<figures::Figures> {
    let mut r: RunResult =
        if bytes.first() == Some(&b'{') { serde_json::from_slice(bytes).ok()? } else { decompress_document(bytes).ok()? };
    for (entry, data) in timelines {
        restore_timeline(&mut r, *entry, data).ok()?;
    }
    Some(figures::figures_of(&r))
}

/// The timelines lent out of a run, encoded as the store keeps them (`columns`), on every CPU
/// at once (measuring is over), a CPU's worth of series at a time; each blob handed to `keep`
/// with its entry as it is made, so no more than a batch of them is in memory.
pub(super) fn encode_timelines(
    timelines: &[(usize, TimelineData)],
    mut keep: impl FnMut(usize, Vec<u8>) -> Result<(), String>,
) -> Result<(), String> {
    let batch = std::thread::available_parallelism().map_or(1, |n| n.get());
    for chunk in timelines.chunks(batch) {
        let blobs: Vec<Vec<u8>> = std::thread::scope(|s| {
            let handles: Vec<_> = chunk.iter().map(|(_, t)| s.spawn(move || columns::encode(t))).collect();
            handles
                .into_iter()
                .map(|h| h.join().map_err(|_| "encoding a timeline failed".to_string()))
                .collect::<Result<Vec<Vec<u8>>, String>>()
        })?;
        for ((i, _), blob) in chunk.iter().zip(blobs) {
            keep(*i, blob)?;
        }
    }
    Ok(())
}

/// A stored timeline's blob put back into the document it was lent from; `Err` says what is
/// wrong with it.
pub(super) fn restore_timeline(r: &mut RunResult, entry: i64, data: &[u8]) -> Result<(), String> {
    let t = columns::decode(data).ok_or_else(|| format!("the timeline of its entry {entry} is damaged"))?;
    let e = usize::try_from(entry)
        .ok()
        .filter(|&e| e < r.probes.len())
        .ok_or_else(|| format!("a timeline for entry {entry}, which it lacks"))?;
    r.timelines_put_back(vec![(e, t)]);
    Ok(())
}

/// A kernel configuration's options as the store keeps them: `NAME=value` lines, compressed.
pub(super) fn compress_options(options: &BTreeMap<String, String>) -> std::io::Result<Vec<u8>> {
    let mut z = flate2::write::ZlibEncoder::new(Vec::new(), flate2::Compression::fast());
    for (k, v) in options {
        std::io::Write::write_all(&mut z, format!("{k}={v}\n").as_bytes())?;
    }
    z.finish()
}

/// [`compress_options`] read back.
pub(super) fn decompress_options(blob: &[u8]) -> std::io::Result<BTreeMap<String, String>> {
    let mut text = String::new();
    std::io::Read::read_to_string(&mut std::io::Read::take(flate2::read::ZlibDecoder::new(blob), 16 << 20), &mut text)?;
    Ok(text.lines().filter_map(|l| l.split_once('=')).map(|(k, v)| (k.to_string(), v.to_string())).collect())
}

/// Saves a result that could not be kept in the store to a rescue file: the whole document as
/// `--json` writes it, in a new file of mode 0600 named `rtgauge-rescued-*.json` with an
/// unpredictable tail, created exclusively (a name or link planted there is never followed or
/// written through); in the store's directory, else the current directory, else the temporary
/// one. A file that cannot be written whole is removed. `rtgauge import FILE` stores it later.
/// Returns where it is.
pub fn rescue(r: &RunResult, beside: Option<PathBuf>) -> Result<PathBuf, StoreError> {
    rescue_text(r, beside).map_err(StoreError::Failed)
}

/// [`rescue`], its failure as text.
pub(super) fn rescue_text(r: &RunResult, beside: Option<PathBuf>) -> Result<PathBuf, String> {
    let mut dirs: Vec<PathBuf> = beside.into_iter().collect();
    dirs.extend([PathBuf::from("."), std::env::temp_dir()]);
    sys::files::save_new(&dirs, "rtgauge-rescued-", |f| {
        let mut w = std::io::BufWriter::with_capacity(64 * 1024, f);
        serde_json::to_writer_pretty(&mut w, r)?;
        std::io::Write::write_all(&mut w, b"\n")?;
        std::io::Write::flush(&mut w)
    })
    .map_err(|e| format!("no rescue file could be written ({e})"))
}

/// What `rtgauge list` shows of a result.
pub fn row_of(r: &RunResult) -> RunRow {
    let probes: Vec<&str> = r.config.probes.iter().map(|p| p.name.as_str()).collect();
    let worst = r.probes.iter().filter(|p| p.in_worst_case()).filter_map(|p| p.max_ns).max();
    RunRow {
        id: 0,
        uuid: r.uuid.map(|u| u.to_string()),
        started_at: r.started_at.clone(),
        label: None,
        board: r.board.as_ref().map_or_else(|| r.system.hostname.clone(), |b| b.name.clone()),
        host: r.system.hostname.clone(),
        kernel: r.system.kernel_release.clone(),
        preemption: r.system.preemption.model.clone(),
        scenario: r.config.scenario.as_ref().map(|s| s.name.clone()),
        probes: probes.join(","),
        worst_ns: worst,
        // As the verdict's headline reads it: a run that failed a check fails, criteria given or
        // not (a CPU that measured nothing fails every run); `none` only for a run that passed
        // without criteria.
        verdict: match (r.verdict.criteria_given, r.verdict.passed) {
            (_, false) => "fail".into(),
            (true, true) => "pass".into(),
            (false, true) => "none".into(),
        },
        status: format!("{:?}", r.status).to_lowercase(),
        imported_from: None,
        series: r.continuous.as_ref().map(|c| c.series.to_string()),
        part: r.continuous.as_ref().map(|c| c.index as i64),
    }
}
