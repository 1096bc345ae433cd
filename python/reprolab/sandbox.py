"""The kernel side of reprolab's sandbox, applied by the processes that run user code.

Python, not Rust, applies these because they must happen inside the process that is restricted,
after `unshare` has set up its namespaces (it writes /proc/self/uid_map, which a file-system
restriction applied before it would forbid) and before any thread exists (Landlock restricts the
calling thread and its future children only). Everything here is a plain system call through
ctypes; nothing is imported that could start a thread.

* `restrict(writable, ...)`: a Landlock domain in which nothing but `writable` (and a few device
  files) can be written, created, removed or renamed, no TCP socket can be bound or connected,
  no signal reaches a process outside the domain, no abstract Unix socket outside it can be
  reached, and (kernels whose Landlock has LANDLOCK_ACCESS_FS_RESOLVE_UNIX) no path-named Unix
  socket outside `writable` can be connected to. Reading stays allowed everywhere: subjects read
  their data from wherever the user keeps it.
* `private_shm()`: a /dev/shm of its own (a fresh tmpfs in a mount namespace of its own), so that
  user code, which may write there (POSIX shared memory, semaphores, torch's DataLoader), can
  neither read, change nor remove the shared memory of the user's other programs, and what it
  leaves there does not outlive the namespace; `clear_shm()` empties it between evaluations.
* `die_with_parent()`: PR_SET_PDEATHSIG, so the process is SIGKILLed when its parent dies.
* `become_subreaper()`: orphans of the subtree are re-parented here instead of to PID 1, so
  `kill_descendants()` finds daemons that double-forked and called setsid.
"""
from __future__ import annotations

import ctypes
import os
import signal

_SYS_CREATE_RULESET = 444
_SYS_ADD_RULE = 445
_SYS_RESTRICT_SELF = 446
_CREATE_RULESET_VERSION = 1
_RULE_PATH_BENEATH = 1

_CLONE_NEWNS = 0x00020000
_MS_NOSUID = 1 << 1
_MS_NODEV = 1 << 2
_MS_REC = 1 << 14
_MS_PRIVATE = 1 << 18
_SHM = "/dev/shm"

_PR_SET_PDEATHSIG = 1
_PR_SET_CHILD_SUBREAPER = 36
_PR_SET_NO_NEW_PRIVS = 38

# Landlock access rights (include/uapi/linux/landlock.h), and the ABI that introduced each.
_FS_WRITE_FILE = 1 << 1
_FS_REMOVE_DIR = 1 << 4
_FS_REMOVE_FILE = 1 << 5
_FS_MAKE_CHAR = 1 << 6
_FS_MAKE_DIR = 1 << 7
_FS_MAKE_REG = 1 << 8
_FS_MAKE_SOCK = 1 << 9
_FS_MAKE_FIFO = 1 << 10
_FS_MAKE_BLOCK = 1 << 11
_FS_MAKE_SYM = 1 << 12
_FS_REFER = 1 << 13  # ABI 2
_FS_TRUNCATE = 1 << 14  # ABI 3
_FS_RESOLVE_UNIX = 1 << 16  # merged in 2026; probed, not inferred from the ABI number
_NET_BIND_TCP = 1 << 0  # ABI 4
_NET_CONNECT_TCP = 1 << 1  # ABI 4
_SCOPE_ABSTRACT_UNIX = 1 << 0  # ABI 6
_SCOPE_SIGNAL = 1 << 1  # ABI 6

# Rights that may be granted on a file that is not a directory.
_FILE_RIGHTS = _FS_WRITE_FILE | _FS_TRUNCATE | _FS_RESOLVE_UNIX

# Device files any program may write (and sockets made there): not the user's data.
_DEVICES = ("/dev/null", "/dev/zero", "/dev/full", "/dev/tty", "/dev/shm")

_libc = ctypes.CDLL(None, use_errno=True)
_libc.syscall.restype = ctypes.c_long


class _RulesetAttr(ctypes.Structure):
    _fields_ = [("fs", ctypes.c_uint64), ("net", ctypes.c_uint64), ("scoped", ctypes.c_uint64)]


class _PathBeneath(ctypes.Structure):
    _pack_ = 1
    _fields_ = [("allowed", ctypes.c_uint64), ("parent_fd", ctypes.c_int32)]


def _syscall(number, *args):
    ret = _libc.syscall(ctypes.c_long(number), *args)
    if ret < 0:
        err = ctypes.get_errno()
        raise OSError(err, os.strerror(err))
    return ret


def _prctl(option, arg):
    if _libc.prctl(option, ctypes.c_ulong(arg), 0, 0, 0) != 0:
        err = ctypes.get_errno()
        raise OSError(err, os.strerror(err))


def landlock_abi():
    """The kernel's Landlock ABI version, 0 when Landlock is missing or disabled."""
    try:
        return _syscall(_SYS_CREATE_RULESET, None, ctypes.c_size_t(0),
                        ctypes.c_uint32(_CREATE_RULESET_VERSION))
    except OSError:
        return 0


def _attr_size(abi):
    return 24 if abi >= 6 else 16 if abi >= 4 else 8


def _create_ruleset(fs, net, scoped, abi):
    attr = _RulesetAttr(fs, net, scoped)
    return _syscall(_SYS_CREATE_RULESET, ctypes.byref(attr), ctypes.c_size_t(_attr_size(abi)),
                    ctypes.c_uint32(0))


def _supports_resolve_unix(abi):
    try:
        os.close(_create_ruleset(_FS_WRITE_FILE | _FS_RESOLVE_UNIX, 0, 0, abi))
        return True
    except OSError:
        return False


def restrict(writable, tcp=False):
    """Enter a Landlock domain (see the module docs; `tcp=True` leaves TCP to a network
    namespace); returns what is enforced, for the record:
    {"landlock": ABI, "fs": bool, "tcp": bool, "signals": bool, "unix_sockets": bool}.
    Raises nothing: a kernel without Landlock gets an unrestricted process and says so."""
    abi = landlock_abi()
    status = {"landlock": abi, "fs": False, "tcp": False, "signals": False,
              "unix_sockets": False}
    if abi < 1:
        return status
    fs = (_FS_WRITE_FILE | _FS_REMOVE_DIR | _FS_REMOVE_FILE | _FS_MAKE_CHAR | _FS_MAKE_DIR
          | _FS_MAKE_REG | _FS_MAKE_SOCK | _FS_MAKE_FIFO | _FS_MAKE_BLOCK | _FS_MAKE_SYM)
    if abi >= 2:
        fs |= _FS_REFER
    if abi >= 3:
        fs |= _FS_TRUNCATE
    resolve_unix = _supports_resolve_unix(abi)
    if resolve_unix:
        fs |= _FS_RESOLVE_UNIX
    net = 0 if tcp or abi < 4 else _NET_BIND_TCP | _NET_CONNECT_TCP
    scoped = _SCOPE_ABSTRACT_UNIX | _SCOPE_SIGNAL if abi >= 6 else 0
    try:
        ruleset = _create_ruleset(fs, net, scoped, abi)
    except OSError:
        return status
    try:
        for path in list(writable) + list(_DEVICES):
            try:
                fd = os.open(path, os.O_PATH | os.O_CLOEXEC)
            except OSError:
                continue  # a device this machine lacks; a missing scratch dir is the caller's
            try:
                is_dir = os.path.isdir(f"/proc/self/fd/{fd}")
                rule = _PathBeneath(fs if is_dir else fs & _FILE_RIGHTS, fd)
                _syscall(_SYS_ADD_RULE, ctypes.c_int(ruleset), ctypes.c_int(_RULE_PATH_BENEATH),
                         ctypes.byref(rule), ctypes.c_uint32(0))
            finally:
                os.close(fd)
        _prctl(_PR_SET_NO_NEW_PRIVS, 1)
        _syscall(_SYS_RESTRICT_SELF, ctypes.c_int(ruleset), ctypes.c_uint32(0))
    except OSError:
        return status
    finally:
        os.close(ruleset)
    status.update(fs=True, tcp=net != 0, signals=scoped != 0, unix_sockets=resolve_unix)
    return status


def private_shm():
    """Give this process, and everything it starts, a /dev/shm of its own: a fresh tmpfs in a
    new mount namespace (mounts made private first, so nothing propagates to the host). Needs
    CAP_SYS_ADMIN in its user namespace (it has it under `unshare -r`) and must run while the
    process has one thread and before `restrict` (a Landlock domain cannot mount). Returns
    whether it worked; when it did not, /dev/shm stays the host's."""
    if not os.path.isdir(_SHM):
        return False
    _libc.mount.argtypes = [ctypes.c_char_p, ctypes.c_char_p, ctypes.c_char_p, ctypes.c_ulong,
                            ctypes.c_char_p]
    if _libc.unshare(ctypes.c_int(_CLONE_NEWNS)) != 0:
        return False
    if _libc.mount(None, b"/", None, _MS_REC | _MS_PRIVATE, None) != 0:
        return False
    return _libc.mount(b"tmpfs", _SHM.encode(), b"tmpfs", _MS_NOSUID | _MS_NODEV,
                       b"mode=1777") == 0


def clear_shm():
    """Remove whatever is in /dev/shm (a private one, see `private_shm`): what an evaluation
    left there must not reach the next one, nor hold memory after it."""
    import shutil

    try:
        names = os.listdir(_SHM)
    except OSError:
        return
    for name in names:
        path = os.path.join(_SHM, name)
        try:
            if os.path.isdir(path) and not os.path.islink(path):
                shutil.rmtree(path, ignore_errors=True)
            else:
                os.unlink(path)
        except OSError:
            pass


def die_with_parent():
    """SIGKILL this process when its parent dies; exit now if the parent is already gone."""
    parent = os.getppid()
    try:
        _prctl(_PR_SET_PDEATHSIG, signal.SIGKILL)
    except OSError:
        return
    # The parent may have died before the prctl: then we were re-parented already. (In a PID
    # namespace the parent is outside it and getppid() says 0, before and after.)
    if os.getppid() != parent:
        os._exit(1)


def become_subreaper():
    """Orphans of this subtree come to this process (not to init), so they can be found."""
    try:
        _prctl(_PR_SET_CHILD_SUBREAPER, 1)
        return True
    except OSError:
        return False


def host_pid():
    """This process's id as the host sees it: /proc is the host's, even inside a PID namespace."""
    try:
        return int(os.readlink("/proc/self"))
    except (OSError, ValueError):
        return os.getpid()


def _children():
    pids = []
    try:
        tasks = os.listdir("/proc/self/task")
    except OSError:
        return pids
    for tid in tasks:
        try:
            with open(f"/proc/self/task/{tid}/children") as f:
                pids.extend(int(p) for p in f.read().split())
        except (OSError, ValueError):
            continue
    return pids


def _reap():
    while True:
        try:
            pid, _ = os.waitpid(-1, os.WNOHANG)
        except ChildProcessError:
            return
        if pid == 0:
            return


def kill_descendants(rounds=50):
    """SIGKILL every process below this one and reap them. As PID 1 of a PID namespace that is
    one kill(-1) (which spares PID 1); otherwise (a subreaper) children are killed round by
    round, since the children of a killed process come back to us as orphans."""
    import time

    if os.getpid() == 1:
        try:
            os.kill(-1, signal.SIGKILL)
        except OSError:
            pass
        deadline = time.monotonic() + 5
        while time.monotonic() < deadline:
            try:
                if os.waitpid(-1, os.WNOHANG)[0] == 0:
                    time.sleep(0.005)
            except ChildProcessError:
                return
        return
    for _ in range(rounds):
        # /proc/self/task/*/children lists host ids, which outside a PID namespace are ours.
        children = _children()
        if not children:
            break
        for pid in children:
            for kill in (os.killpg, os.kill):
                try:
                    kill(pid, signal.SIGKILL)
                except OSError:
                    pass
        time.sleep(0.01)
        _reap()
    _reap()


def main(argv):
    """`python -m reprolab.sandbox [--write DIR]... -- PROGRAM ARGS...`: run PROGRAM (a plain
    script subject, a fresh pytest) as a child of this process, which dies with its own parent
    (reprolab), adopts and finally kills whatever PROGRAM leaves behind, and stands between
    PROGRAM and reprolab (code that signals its parent reaches this process, not reprolab). With
    `--write`, PROGRAM runs in the Landlock domain where only the DIRs are writable. Exits as
    PROGRAM did (128 + N when it died of signal N); 2 on a malformed command line."""
    import sys

    if "--" not in argv or argv.index("--") == len(argv) - 1:
        print("usage: python -m reprolab.sandbox [--write DIR]... -- PROGRAM [ARGS...]",
              file=sys.stderr)
        return 2
    split = argv.index("--")
    options, command = argv[:split], argv[split + 1:]
    writable = [options[i + 1] for i, a in enumerate(options[:-1]) if a == "--write"]
    die_with_parent()
    if os.getpid() != 1:
        become_subreaper()
    if writable:
        private_shm()
    pid = os.fork()
    if pid == 0:
        try:
            die_with_parent()
            if writable:
                restrict(writable, tcp="--netns" in options)
            os.execvp(command[0], command)
        except OSError as e:
            print(f"reprolab.sandbox: cannot run {command[0]}: {e}", file=sys.stderr)
        os._exit(127)
    while True:
        try:
            _, status = os.waitpid(pid, 0)
            break
        except InterruptedError:
            continue
    kill_descendants()
    if os.WIFSIGNALED(status):
        return 128 + os.WTERMSIG(status)
    return os.waitstatus_to_exitcode(status)


if __name__ == "__main__":
    raise SystemExit(main(__import__("sys").argv[1:]))
