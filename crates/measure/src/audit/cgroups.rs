//! Where this process sits in the cgroup hierarchies (v2, and v1 per controller) and where
//! they are mounted: what the loads' containment and the CPU shield build on. Read-only.

use std::path::PathBuf;

/// A mounted hierarchy: where it is mounted and which path of it is the mount's root.
pub struct Mount {
    pub dir: PathBuf,
    pub root: String,
}

/// Finds the cgroup2 mount, or the v1 mount carrying `controller`, in /proc/self/mountinfo.
pub fn find_mount(controller: Option<&str>) -> Option<Mount> {
    let text = std::fs::read_to_string("/proc/self/mountinfo").ok()?;
    text.lines().find_map(|line| {
        let (pre, post) = line.split_once(" - ")?;
        let pre: Vec<&str> = pre.split(' ').collect();
        let post: Vec<&str> = post.split(' ').collect();
        let ok = match controller {
            None => post.first() == Some(&"cgroup2"),
            Some(c) => post.first() == Some(&"cgroup") && post.get(2).is_some_and(|o| o.split(',').any(|x| x == c)),
        };
        if !ok {
            return None;
        }
        Some(Mount { dir: PathBuf::from(unescape(pre.get(4)?)), root: unescape(pre.get(3)?) })
    })
}

/// mountinfo escapes blanks and backslashes as octal (`\040`).
fn unescape(s: &str) -> String {
    s.replace("\\040", " ").replace("\\011", "\t").replace("\\012", "\n").replace("\\134", "\\")
}

/// This process's path in the v2 hierarchy (`None`) or in the v1 hierarchy of `controller`.
pub fn own_path(controller: Option<&str>) -> Option<String> {
    let text = std::fs::read_to_string("/proc/self/cgroup").ok()?;
    text.lines().find_map(|l| {
        let mut it = l.splitn(3, ':');
        let (id, ctrls, path) = (it.next()?, it.next()?, it.next()?);
        let ok = match controller {
            None => id == "0" && ctrls.is_empty(),
            Some(c) => ctrls.split(',').any(|x| x == c),
        };
        ok.then(|| path.to_string())
    })
}

/// The directory of this process's own cgroup in a mounted hierarchy.
pub fn own_dir(controller: Option<&str>) -> Result<PathBuf, crate::vocab::Error> {
    own_dir_text(controller).map_err(crate::vocab::Error::System)
}

/// [`own_dir`], its failure as text.
fn own_dir_text(controller: Option<&str>) -> Result<PathBuf, String> {
    let what = controller.map_or("cgroup2".to_string(), |c| format!("cgroup v1 {c}"));
    let m = find_mount(controller).ok_or_else(|| format!("no {what} hierarchy is mounted"))?;
    let path = own_path(controller).ok_or_else(|| format!("this process is in no {what} cgroup"))?;
    let rel = path.strip_prefix(m.root.trim_end_matches('/')).unwrap_or(&path);
    Ok(m.dir.join(rel.trim_start_matches('/')))
}
