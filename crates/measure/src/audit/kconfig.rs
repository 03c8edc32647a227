//! The running kernel's build configuration, from `/proc/config.gz` (CONFIG_IKCONFIG_PROC) or
//! `/boot/config-RELEASE`: which options it was built with (PREEMPT_RT, HIGH_RES_TIMERS,
//! NO_HZ_FULL, debug options that add latency, HZ). Read-only.

use std::collections::BTreeMap;
use std::io::Read;

/// A configuration file is a few hundred KiB; anything past this is not one.
const MAX_BYTES: u64 = 16 << 20;

/// The options set in the kernel's configuration (`y`, `m`, numbers, strings; unset ones absent).
#[derive(Debug, Clone, Default, PartialEq)]
pub struct KernelConfig {
    /// Where it was read from.
    pub source: String,
    options: BTreeMap<String, String>,
}

impl KernelConfig {
    /// Reads the running kernel's configuration, if the system keeps it anywhere readable.
    pub fn read(release: &str) -> Option<KernelConfig> {
        let gz = std::fs::File::open("/proc/config.gz").ok().and_then(|f| {
            let mut text = String::new();
            flate2::read::GzDecoder::new(f).take(MAX_BYTES).read_to_string(&mut text).ok().map(|_| text)
        });
        if let Some(text) = gz {
            return Some(KernelConfig::parse(&text, "/proc/config.gz"));
        }
        let path = format!("/boot/config-{release}");
        let f = std::fs::File::open(&path).ok()?;
        let mut text = String::new();
        f.take(MAX_BYTES).read_to_string(&mut text).ok()?;
        Some(KernelConfig::parse(&text, &path))
    }

    /// Parses `CONFIG_X=value` lines; `# CONFIG_X is not set` and everything else are skipped.
    pub fn parse(text: &str, source: &str) -> KernelConfig {
        let options = text
            .lines()
            .filter_map(|l| l.strip_prefix("CONFIG_")?.split_once('='))
            .map(|(k, v)| (k.to_string(), v.trim_matches('"').to_string()))
            .collect();
        KernelConfig { source: source.to_string(), options }
    }

    /// The value of `CONFIG_<name>`, if set.
    pub fn get(&self, name: &str) -> Option<&str> {
        self.options.get(name).map(String::as_str)
    }

    /// Every option set, by name (without `CONFIG_`).
    pub fn options(&self) -> &BTreeMap<String, String> {
        &self.options
    }

    /// Whether `CONFIG_<name>` is built in (`y`).
    pub fn enabled(&self, name: &str) -> bool {
        self.get(name) == Some("y")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_set_options_and_skips_unset_ones() {
        let c = KernelConfig::parse(
            "# comment\nCONFIG_HZ=250\nCONFIG_PREEMPT_RT=y\n# CONFIG_LOCKDEP is not set\nCONFIG_X=\"a b\"\n",
            "t",
        );
        assert_eq!(c.get("HZ"), Some("250"));
        assert!(c.enabled("PREEMPT_RT"));
        assert!(!c.enabled("LOCKDEP"));
        assert_eq!(c.get("X"), Some("a b"));
    }

    #[test]
    fn reads_this_machines_configuration_when_it_has_one() {
        let release = std::fs::read_to_string("/proc/sys/kernel/osrelease").unwrap_or_default();
        let here = std::path::Path::new("/proc/config.gz").exists()
            || std::path::Path::new(&format!("/boot/config-{}", release.trim())).exists();
        let c = KernelConfig::read(release.trim());
        assert_eq!(c.is_some(), here);
        if let Some(c) = c {
            assert!(c.get("HZ").is_some(), "every configuration sets HZ");
        }
    }
}
