//! The board a run is measured on, as a lab tells boards apart: the device tree's `model` and
//! `compatible` strings, the DMI vendor and product, the kernel command line, and the kernel's
//! build configuration (its SHA-256, and its options for comparing the board's runs). Read-only,
//! every file as `sys::files` says: `/proc` and `/sys` files only on those file systems, a
//! `/boot` file only when regular, each read up to a cap.

use crate::result::board::KernelOptions;
use crate::result::board::{Board, ConfigChanges, KernelConfigId};
use crate::sys::files::{kernel_fs, open_regular, KernelFs};
use std::collections::BTreeMap;
use std::io::Read;
use std::path::Path;

/// The most a one-value kernel file (a model, a DMI string, the command line) is read.
const MAX_FIELD: u64 = 64 * 1024;
/// The most a kernel configuration is read (decompressed): it is a few hundred KiB.
const MAX_CONFIG: u64 = 16 << 20;

/// The board `name` as this system describes it, with its kernel configuration's options
/// (`None` when the system keeps no configuration readable) for the store.
pub fn read(name: &str, kernel_release: &str) -> (Board, Option<KernelOptions>) {
    let text = |p: &str| kernel_file(p, MAX_FIELD).map(|b| clean(&b)).filter(|s| !s.is_empty());
    let compatible = kernel_file("/proc/device-tree/compatible", MAX_FIELD)
        .map(|b| b.split(|&c| c == 0).map(clean).filter(|s| !s.is_empty()).collect())
        .unwrap_or_default();
    let config = kernel_config(kernel_release);
    let board = Board {
        name: name.to_string(),
        model: text("/proc/device-tree/model"),
        compatible,
        dmi_sys_vendor: text("/sys/class/dmi/id/sys_vendor"),
        dmi_product_name: text("/sys/class/dmi/id/product_name"),
        dmi_board_vendor: text("/sys/class/dmi/id/board_vendor"),
        dmi_board_name: text("/sys/class/dmi/id/board_name"),
        cmdline: text("/proc/cmdline"),
        kernel_config: config.as_ref().map(|(source, k)| KernelConfigId { source: source.clone(), sha256: k.sha256.clone() }),
        config_changes: None,
    };
    (board, config.map(|(_, k)| k))
}

/// A board named `name` and nothing else known of it (an imported run).
pub fn named(name: &str) -> Board {
    Board { name: name.to_string(), ..Board::default() }
}

/// The options that differ between an earlier run's configuration (`before`, run `id`) and now.
pub fn config_changes(
    id: i64,
    uuid: Option<String>,
    before: &BTreeMap<String, String>,
    now: &BTreeMap<String, String>,
) -> ConfigChanges {
    let set = |k: &String, v: &String| format!("CONFIG_{k}={v}");
    ConfigChanges {
        since_uuid: uuid,
        since_run: id,
        added: now.iter().filter(|(k, _)| !before.contains_key(*k)).map(|(k, v)| set(k, v)).collect(),
        removed: before.iter().filter(|(k, _)| !now.contains_key(*k)).map(|(k, v)| set(k, v)).collect(),
        changed: now
            .iter()
            .filter_map(|(k, v)| before.get(k).filter(|b| *b != v).map(|b| format!("CONFIG_{k}: {b} -> {v}")))
            .collect(),
    }
}

/// A file of `/proc` or `/sys` (`/proc/device-tree` is a link into `/sys/firmware`), read only
/// when it is on one of them, up to `cap` bytes; `None` when absent or anything else.
fn kernel_file(path: &str, cap: u64) -> Option<Vec<u8>> {
    match kernel_fs(Path::new(path)) {
        Ok(Some(KernelFs::Proc | KernelFs::Sysfs)) => {}
        _ => return None,
    }
    let mut bytes = Vec::new();
    std::fs::File::open(path).ok()?.take(cap).read_to_end(&mut bytes).ok()?;
    Some(bytes)
}

/// A kernel string as text: up to its first NUL, invalid UTF-8 replaced, trimmed (control
/// characters are kept here and escaped where shown).
fn clean(bytes: &[u8]) -> String {
    let end = bytes.iter().position(|&b| b == 0).unwrap_or(bytes.len());
    String::from_utf8_lossy(&bytes[..end]).trim().to_string()
}

/// The running kernel's build configuration: `/proc/config.gz` (on procfs, decompressed), else
/// `/boot/config-RELEASE` (a regular file); where it was read, its SHA-256 and its options.
fn kernel_config(release: &str) -> Option<(String, KernelOptions)> {
    let from_proc = || {
        let gz = kernel_file("/proc/config.gz", MAX_CONFIG)?;
        let mut text = Vec::new();
        flate2::read::GzDecoder::new(&gz[..]).take(MAX_CONFIG).read_to_end(&mut text).ok()?;
        Some(("/proc/config.gz".to_string(), text))
    };
    let from_boot = || {
        // A release with a '/' would name another directory.
        if release.is_empty() || release.contains('/') {
            return None;
        }
        let path = format!("/boot/config-{release}");
        let mut text = Vec::new();
        open_regular(Path::new(&path)).ok()?.take(MAX_CONFIG).read_to_end(&mut text).ok()?;
        Some((path, text))
    };
    let (source, text) = from_proc().or_else(from_boot)?;
    Some((source, options_of(&text)))
}

/// A configuration's text as the store keeps it: its SHA-256 and its options.
fn options_of(text: &[u8]) -> KernelOptions {
    use sha2::Digest;
    let sha256: String = sha2::Sha256::digest(text).iter().map(|b| format!("{b:02x}")).collect();
    let k = super::kconfig::KernelConfig::parse(&String::from_utf8_lossy(text), "");
    KernelOptions { sha256, options: k.options().clone() }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn changes_name_what_was_added_removed_and_changed() {
        let before = options_of(b"CONFIG_A=y\nCONFIG_B=m\n# CONFIG_C is not set\nCONFIG_HZ=250\n").options;
        let now = options_of(b"CONFIG_A=y\nCONFIG_C=y\nCONFIG_HZ=1000\n").options;
        let c = config_changes(3, None, &before, &now);
        assert_eq!(c.added, ["CONFIG_C=y"]);
        assert_eq!(c.removed, ["CONFIG_B=m"]);
        assert_eq!(c.changed, ["CONFIG_HZ: 250 -> 1000"]);
        assert_eq!(c.since_run, 3);
        assert_eq!(config_changes(3, None, &now, &now), ConfigChanges { since_run: 3, ..ConfigChanges::default() });
    }

    #[test]
    fn kernel_strings_end_at_their_nul() {
        assert_eq!(clean(b"Raspberry Pi 4 Model B Rev 1.4\0"), "Raspberry Pi 4 Model B Rev 1.4");
        assert_eq!(clean(b"  x\xffy \n"), "x\u{fffd}y");
    }
}
