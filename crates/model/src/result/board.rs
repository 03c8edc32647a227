//! The board a run was measured on: its name (`--board`, the host name by default) and what
//! identifies it and its configuration in a lab — the device tree's model and compatible
//! strings, the DMI vendor and product, the kernel command line, the SHA-256 of the kernel's
//! build configuration, and which options changed since the board's last stored run.

use serde::{Deserialize, Serialize};

/// A board, named and described. Every field but `name` is null (or empty) when the system does
/// not say it (no device tree on a PC, no DMI on most ARM boards) or was not read (an import).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct Board {
    /// `--board`, else the host name (for an import: the host the file names).
    pub name: String,
    /// `/proc/device-tree/model`.
    pub model: Option<String>,
    /// `/proc/device-tree/compatible`, most specific first.
    pub compatible: Vec<String>,
    /// `/sys/class/dmi/id/sys_vendor`.
    pub dmi_sys_vendor: Option<String>,
    /// `/sys/class/dmi/id/product_name`.
    pub dmi_product_name: Option<String>,
    /// `/sys/class/dmi/id/board_vendor`.
    pub dmi_board_vendor: Option<String>,
    /// `/sys/class/dmi/id/board_name`.
    pub dmi_board_name: Option<String>,
    /// `/proc/cmdline`.
    pub cmdline: Option<String>,
    /// The kernel's build configuration: where it was read and the SHA-256 of its text.
    pub kernel_config: Option<KernelConfigId>,
    /// The options that differ from the last stored run of the same board that recorded its
    /// configuration (found when the store is opened, before measuring); absent without a
    /// store, a configuration, or an earlier run.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub config_changes: Option<ConfigChanges>,
}

/// Which kernel configuration a run ran on.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct KernelConfigId {
    /// `/proc/config.gz` or `/boot/config-RELEASE`.
    pub source: String,
    /// The SHA-256, in hex, of the configuration's text (decompressed).
    pub sha256: String,
}

/// The kernel options that differ from an earlier run of the board.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct ConfigChanges {
    /// The earlier run: its UUID (null when the store gave none).
    pub since_uuid: Option<String>,
    /// Its id in the store the run was kept in.
    pub since_run: i64,
    /// Options set now and not then (`NAME=value`).
    pub added: Vec<String>,
    /// Options set then and not now (`NAME=value`).
    pub removed: Vec<String>,
    /// Options set both times to different values (`NAME: before -> now`).
    pub changed: Vec<String>,
}

/// A kernel's build configuration as it was read, for the store (which keeps each text once)
/// and for [`ConfigChanges`]: the SHA-256 of its text and its options (`NAME` → value).
#[derive(Debug, Clone, PartialEq)]
pub struct KernelOptions {
    pub sha256: String,
    pub options: std::collections::BTreeMap<String, String>,
}
