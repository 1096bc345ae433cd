//! The processes of one evaluation, found as a tree under the process reprolab started (not as
//! a process group, which a daemon leaves with setsid), and what they really use: the
//! proportional set size (PSS) of the tree, in which a page shared by n processes counts 1/n
//! in each, so the pages a forked training shares with its warm parent, or with the
//! DataLoader workers it forks, count once in all. Shared memory that no process maps (a file
//! written into the evaluation's private `/dev/shm`, a `memfd` written and left unmapped) is in
//! no PSS: it is added as what the tree's shared files hold beyond the shared pages its
//! processes map ([`unmapped_shared_kb`]).

use std::collections::HashMap;
use std::os::unix::fs::MetadataExt;
use std::time::Duration;

/// Every process's parent, read from /proc (zombies left out: they hold no memory and are gone
/// as far as a caller is concerned).
fn parents() -> HashMap<i32, i32> {
    let mut map = HashMap::new();
    let Ok(dir) = std::fs::read_dir("/proc") else {
        return map;
    };
    for entry in dir.flatten() {
        let Some(pid) = entry
            .file_name()
            .to_str()
            .and_then(|s| s.parse::<i32>().ok())
        else {
            continue;
        };
        let Ok(stat) = std::fs::read_to_string(format!("/proc/{pid}/stat")) else {
            continue;
        };
        // Fields after the parenthesised command name: state ppid ...
        let Some(rest) = stat.rsplit_once(')').map(|(_, r)| r) else {
            continue;
        };
        let mut fields = rest.split_whitespace();
        let state = fields.next();
        let ppid = fields.next().and_then(|s| s.parse::<i32>().ok());
        if let (Some(ppid), false) = (ppid, state == Some("Z")) {
            map.insert(pid, ppid);
        }
    }
    map
}

/// The living processes below `root` (children, their children, ...), `root` left out.
pub fn descendants(root: i32) -> Vec<i32> {
    let parents = parents();
    let mut children: HashMap<i32, Vec<i32>> = HashMap::new();
    for (&pid, &ppid) in &parents {
        children.entry(ppid).or_default().push(pid);
    }
    let mut out = Vec::new();
    let mut stack = vec![root];
    while let Some(p) = stack.pop() {
        for &c in children.get(&p).map(Vec::as_slice).unwrap_or(&[]) {
            out.push(c);
            stack.push(c);
        }
    }
    out
}

/// PSS of one process in kB (its RSS when smaps_rollup cannot be read, kernels before 4.14;
/// 0 when it is gone).
pub fn pss_kb(pid: i32) -> u64 {
    rollup_kb(pid).0
}

/// PSS of one process and the part of it that is shared memory (`Pss_Shmem`: tmpfs and memfd
/// pages it maps), in kB; RSS and 0 when smaps_rollup cannot be read.
fn rollup_kb(pid: i32) -> (u64, u64) {
    if let Ok(text) = std::fs::read_to_string(format!("/proc/{pid}/smaps_rollup")) {
        let field = |name: &str| {
            text.lines()
                .find(|l| l.starts_with(name))
                .and_then(|l| l.split_whitespace().nth(1)?.parse().ok())
                .unwrap_or(0)
        };
        return (field("Pss:"), field("Pss_Shmem:"));
    }
    (rss_kb(pid), 0)
}

/// Resident memory in kB of one process (0 when it is gone): cheap (statm), and never less
/// than its PSS.
pub fn rss_kb(pid: i32) -> u64 {
    std::fs::read_to_string(format!("/proc/{pid}/statm"))
        .ok()
        .and_then(|s| s.split_whitespace().nth(1)?.parse::<u64>().ok())
        .map_or(0, |pages| pages * 4)
}

/// PSS in kB of `root` and everything below it.
pub fn tree_pss_kb(root: i32) -> u64 {
    pss_kb(root) + descendants(root).into_iter().map(pss_kb).sum::<u64>()
}

/// What the shared files of the processes `pids` hold, in kB: the used blocks of their
/// `/dev/shm` when it is a private one (a mount of their own, emptied after every evaluation,
/// so all of it is theirs; the host's holds other programs' memory and is not counted) and the
/// allocated blocks of every `memfd` one of them holds open, each file once.
pub fn shared_files_kb(pids: &[i32]) -> u64 {
    let host_shm = std::fs::metadata("/dev/shm").ok().map(|m| m.dev());
    let private_shm = pids.iter().find_map(|pid| {
        let path = format!("/proc/{pid}/root/dev/shm");
        let dev = std::fs::metadata(&path).ok()?.dev();
        (Some(dev) != host_shm).then_some(path)
    });
    let shm_kb = private_shm.and_then(|p| used_kb(&p)).unwrap_or(0);
    let mut memfds = std::collections::HashSet::new();
    let mut memfd_kb = 0;
    for pid in pids {
        let Ok(fds) = std::fs::read_dir(format!("/proc/{pid}/fd")) else {
            continue;
        };
        for fd in fds.flatten() {
            let is_memfd = std::fs::read_link(fd.path())
                .is_ok_and(|t| t.as_os_str().as_encoded_bytes().starts_with(b"/memfd:"));
            if !is_memfd {
                continue;
            }
            if let Ok(m) = std::fs::metadata(fd.path())
                && memfds.insert((m.dev(), m.ino()))
            {
                memfd_kb += m.blocks() / 2;
            }
        }
    }
    shm_kb + memfd_kb
}

/// Used space of the file system at `path`, in kB.
fn used_kb(path: &str) -> Option<u64> {
    let c = std::ffi::CString::new(path).ok()?;
    let mut st = std::mem::MaybeUninit::<libc::statvfs>::uninit();
    // SAFETY: c is a valid NUL-terminated path and st a buffer of the right type for statvfs.
    if unsafe { libc::statvfs(c.as_ptr(), st.as_mut_ptr()) } != 0 {
        return None;
    }
    // SAFETY: statvfs returned 0, so it filled st.
    let st = unsafe { st.assume_init() };
    let used = st.f_blocks.saturating_sub(st.f_bfree);
    Some(used * st.f_frsize / 1024)
}

/// A process tree under watch: what it uses and how it is stopped.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Tree {
    /// The process reprolab started (a worker, an `unshare`, a script's shell).
    pub root: i32,
    /// Whether stopping the evaluation stops `root` too (a script: yes; a warm worker: no, it
    /// serves the next evaluation).
    pub kill_root: bool,
    /// PSS in kB the tree had before the evaluation started (a warm worker's own), subtracted
    /// from every measurement.
    pub baseline_kb: u64,
}

impl Tree {
    /// A tree that is all the evaluation's: memory counted from zero, killed whole.
    pub fn whole(root: i32) -> Tree {
        Tree {
            root,
            kill_root: true,
            baseline_kb: 0,
        }
    }

    /// The evaluation below a warm worker `root` whose own PSS (with nothing below it) was
    /// `baseline_kb`.
    pub fn below(root: i32, baseline_kb: u64) -> Tree {
        Tree {
            root,
            kill_root: false,
            baseline_kb,
        }
    }

    /// The tree's processes, root first.
    fn pids(&self) -> Vec<i32> {
        let mut pids = vec![self.root];
        pids.extend(descendants(self.root));
        pids
    }

    /// Memory the evaluation added, in MB: the tree's PSS, plus what its shared files hold
    /// beyond the shared pages it maps (those are in its PSS already: a DataLoader's batches in
    /// `/dev/shm` count once).
    pub fn memory_mb(&self) -> u64 {
        let pids = self.pids();
        self.exact_mb(&pids, shared_files_kb(&pids))
    }

    /// [`Tree::memory_mb`] of the processes `pids`, whose shared files hold `shared_kb`.
    fn exact_mb(&self, pids: &[i32], shared_kb: u64) -> u64 {
        let (pss, mapped_shared) = pids
            .iter()
            .map(|&p| rollup_kb(p))
            .fold((0, 0), |(a, b), (p, s)| (a + p, b + s));
        let unmapped = shared_kb.saturating_sub(mapped_shared);
        (pss + unmapped).saturating_sub(self.baseline_kb) / 1024
    }

    /// Memory the evaluation added, in MB, measured exactly ([`Tree::memory_mb`]) only when
    /// the cheap upper bound (RSS for PSS, all of the shared files for their unmapped part)
    /// passes `limit_mb`: reading a torch process's PSS walks its page tables (~9 ms measured
    /// here), reading its RSS does not (~0.01 ms), and the watchdog looks ten times a second.
    /// Below the limit the bound is returned.
    pub fn memory_mb_against(&self, limit_mb: u64) -> u64 {
        let pids = self.pids();
        let shared_kb = shared_files_kb(&pids);
        let rss: u64 = pids.iter().map(|&p| rss_kb(p)).sum();
        let bound = (rss + shared_kb).saturating_sub(self.baseline_kb) / 1024;
        if bound <= limit_mb {
            bound
        } else {
            self.exact_mb(&pids, shared_kb)
        }
    }

    /// Send `signal` to every process of the evaluation (and their process groups).
    pub fn signal(&self, signal: i32) {
        let mut pids = descendants(self.root);
        if self.kill_root {
            pids.push(self.root);
        }
        for pid in pids {
            // SAFETY: kill/killpg have no memory-safety preconditions; a pid that is gone
            // fails harmlessly.
            unsafe {
                libc::kill(pid, signal);
                libc::killpg(pid, signal);
            }
        }
    }

    /// SIGKILL the evaluation's processes until none is left (children of killed processes are
    /// re-parented within the tree when its root is a subreaper or PID 1; a few rounds catch
    /// them). Returns how many were still alive at the end (0 normally).
    pub fn kill(&self) -> usize {
        if self.kill_root {
            // What is left of the root's process group once the root itself has exited.
            // SAFETY: killpg has no memory-safety preconditions.
            unsafe { libc::killpg(self.root, libc::SIGKILL) };
        }
        for _ in 0..50 {
            let left =
                descendants(self.root).len() + usize::from(self.kill_root && alive(self.root));
            if left == 0 {
                return 0;
            }
            self.signal(libc::SIGKILL);
            std::thread::sleep(Duration::from_millis(10));
        }
        descendants(self.root).len()
    }
}

/// The processes whose command line has `arg` as one whole argument (how a test finds the
/// processes a hostile subject or answer started: they carry a tag of the test's own).
pub fn with_argument(arg: &str) -> Vec<i32> {
    let Ok(dir) = std::fs::read_dir("/proc") else {
        return Vec::new();
    };
    dir.flatten()
        .filter_map(|e| e.file_name().to_str()?.parse::<i32>().ok())
        .filter(|pid| {
            std::fs::read(format!("/proc/{pid}/cmdline"))
                .is_ok_and(|c| c.split(|b| *b == 0).any(|a| a == arg.as_bytes()))
        })
        .collect()
}

/// Whether `pid` exists and is not a zombie.
pub fn alive(pid: i32) -> bool {
    std::fs::read_to_string(format!("/proc/{pid}/stat"))
        .ok()
        .and_then(|s| {
            s.rsplit_once(')')
                .map(|(_, r)| r.split_whitespace().next() != Some("Z"))
        })
        .unwrap_or(false)
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::process::{Command, Stdio};

    fn python(code: &str) -> std::process::Child {
        Command::new("python3")
            .args(["-c", code])
            .stdout(Stdio::piped())
            .spawn()
            .expect("python3 runs")
    }

    fn wait_line(child: &mut std::process::Child) {
        let mut line = String::new();
        std::io::BufRead::read_line(
            &mut std::io::BufReader::new(child.stdout.take().unwrap()),
            &mut line,
        )
        .unwrap();
    }

    /// A process that wrote 64 MB and then forked `n` children that only sleep, ready.
    fn sharing_forks(n: usize) -> std::process::Child {
        let mut child = python(&format!(
            "import os, time\n\
             b = bytearray(64 * 2**20)\n\
             for _ in range({n}):\n\
             \x20   if os.fork() == 0:\n\
             \x20       time.sleep(30); os._exit(0)\n\
             print('ok', flush=True); time.sleep(30)"
        ));
        wait_line(&mut child);
        child
    }

    #[test]
    fn a_process_is_found_by_a_whole_argument_only() {
        let tag = format!("proctree-tag-{}", std::process::id());
        let mut child = Command::new("sh")
            .args(["-c", "sleep 30; :", &tag])
            .spawn()
            .expect("sh runs");
        // Until the child has exec'd sh, its command line is still this test's.
        let start = std::time::Instant::now();
        let mut found = with_argument(&tag);
        while found.is_empty() && start.elapsed() < Duration::from_secs(10) {
            std::thread::sleep(Duration::from_millis(20));
            found = with_argument(&tag);
        }
        let part = with_argument(&tag[..tag.len() - 1]);
        // sh forks to run `sleep`: until that fork has exec'd, it carries sh's arguments too.
        let sh = child.id() as i32;
        let family = descendants(sh);
        let _ = child.kill();
        let _ = child.wait();
        assert!(found.contains(&sh), "{found:?}");
        assert!(
            found.iter().all(|p| *p == sh || family.contains(p)),
            "{found:?} (sh {sh}, its children {family:?})"
        );
        assert!(part.is_empty(), "{part:?}");
        assert!(with_argument(&tag).is_empty());
    }

    #[test]
    fn forks_sharing_pages_count_once() {
        // 64 MB written, then 8 forks that only sleep: RSS would count ~9 x 64 MB, PSS ~64 MB.
        let mut child = sharing_forks(8);
        let tree = Tree::whole(child.id() as i32);
        let kids = descendants(tree.root).len();
        let mb = tree.memory_mb();
        tree.kill();
        let _ = child.wait();
        assert_eq!(kids, 8);
        assert!((60..200).contains(&mb), "PSS of the tree {mb} MB");
        assert!(descendants(tree.root).is_empty());
    }

    #[test]
    fn an_unmapped_memfd_counts_a_mapped_one_once() {
        // 64 MB written into a memfd and left unmapped: in no PSS, yet memory all the same.
        let mut child = python(
            "import os, time, mmap\n\
             fd = os.memfd_create('x')\n\
             os.write(fd, b'1' * (64 * 2**20))\n\
             print('ok', flush=True); time.sleep(30)",
        );
        wait_line(&mut child);
        let tree = Tree::whole(child.id() as i32);
        let unmapped = tree.memory_mb();
        tree.kill();
        let _ = child.wait();
        assert!((64..150).contains(&unmapped), "{unmapped} MB");
        // The same pages mapped and touched: in the PSS (as shared memory), not counted again.
        let mut child = python(
            "import os, time, mmap\n\
             fd = os.memfd_create('x')\n\
             os.write(fd, b'1' * (64 * 2**20))\n\
             m = mmap.mmap(fd, 64 * 2**20)\n\
             s = sum(m[i] for i in range(0, 64 * 2**20, 4096))\n\
             print('ok', flush=True); time.sleep(30)",
        );
        wait_line(&mut child);
        let tree = Tree::whole(child.id() as i32);
        let mapped = tree.memory_mb();
        tree.kill();
        let _ = child.wait();
        assert!((64..150).contains(&mapped), "{mapped} MB");
    }

    #[test]
    fn the_cheap_bound_is_used_below_the_limit_and_pss_above_it() {
        let mut child = sharing_forks(4);
        let tree = Tree::whole(child.id() as i32);
        // RSS counts the 64 MB five times; PSS once.
        let bound = tree.memory_mb_against(u64::MAX);
        let exact = tree.memory_mb_against(100);
        tree.kill();
        let _ = child.wait();
        assert!(bound >= 300, "RSS bound {bound} MB");
        assert!((60..200).contains(&exact), "PSS {exact} MB");
    }

    #[test]
    fn a_kept_root_survives_and_its_descendants_do_not() {
        let mut child = python(
            "import os, time\n\
             if os.fork() == 0:\n\
             \x20   os.setsid()\n\
             \x20   time.sleep(30); os._exit(0)\n\
             print('ok', flush=True); time.sleep(30)",
        );
        wait_line(&mut child);
        let tree = Tree::below(child.id() as i32, tree_pss_kb(child.id() as i32));
        assert_eq!(descendants(tree.root).len(), 1);
        assert_eq!(tree.kill(), 0);
        assert!(alive(tree.root));
        let _ = child.kill();
        let _ = child.wait();
    }
}
