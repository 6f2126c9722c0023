"""Stand-alone launcher for one pipeline stage where bubblewrap cannot run (Landlock) or is not used (none).

Run as `python -I -S _launcher.py SPEC_JSON`: standard library only, because `-I -S` keeps the server's
packages (and any PYTHON* variable) out. It:
1. becomes a child subreaper, so every descendant that daemonises (setsid, double fork) is re-parented to it;
2. forks the program; the child sets rlimits, then (landlock mode) restricts itself with a Landlock ruleset
   (read-only repository entries, read/exec system directories, one writable temp directory; TCP and
   abstract unix sockets and signals outside the domain denied) and a seccomp filter (no socket(), io_uring,
   ptrace, namespaces, mounts, keyrings, bpf), then execs the program; the launcher itself stays unrestricted
   and outside the domain, so the program cannot signal it;
3. when the program exits, or on SIGTERM/SIGINT/SIGHUP (the server's timeout or cancellation, or the server
   dying: PR_SET_PDEATHSIG), SIGKILLs every remaining descendant, reaps them, and exits with the program's
   status (128+signal when it was killed).
Exit 125 means the launcher itself failed (its message is on stderr); 127 means the program was not found.
"""

import contextlib
import ctypes
import json
import os
import signal
import stat
import struct
import sys
import time

PR_SET_PDEATHSIG = 1
PR_SET_SECCOMP = 22
PR_SET_NO_NEW_PRIVS = 38
PR_SET_CHILD_SUBREAPER = 36
SECCOMP_MODE_FILTER = 2
SYS_LANDLOCK = (444, 445, 446)  # create_ruleset, add_rule, restrict_self: the same on every architecture

FS_EXECUTE, FS_WRITE_FILE, FS_READ_FILE, FS_READ_DIR = 1, 2, 4, 8
FS_FILE_RIGHTS = FS_EXECUTE | FS_WRITE_FILE | FS_READ_FILE | (1 << 14) | (1 << 15)
ACCESS = {
    "list": FS_READ_DIR,
    "r": FS_READ_FILE | FS_READ_DIR,
    "rx": FS_READ_FILE | FS_READ_DIR | FS_EXECUTE,
    "dev": FS_READ_FILE | FS_WRITE_FILE | (1 << 14),
    "rw": FS_READ_FILE
    | FS_READ_DIR
    | FS_WRITE_FILE
    | (1 << 4)
    | (1 << 5)
    | (1 << 7)
    | (1 << 8)
    | (1 << 9)
    | (1 << 10)
    | (1 << 12)
    | (1 << 13)
    | (1 << 14),
}
BLOCKED = {
    "x86_64": (
        0xC000003E,
        {
            "socket": 41,
            "ptrace": 101,
            "process_vm_readv": 310,
            "process_vm_writev": 311,
            "bpf": 321,
            "perf_event_open": 298,
            "unshare": 272,
            "setns": 308,
            "mount": 165,
            "umount2": 166,
            "pivot_root": 155,
            "chroot": 161,
            "keyctl": 250,
            "add_key": 248,
            "request_key": 249,
            "userfaultfd": 323,
            "init_module": 175,
            "finit_module": 313,
            "delete_module": 176,
            "kexec_load": 246,
            "kexec_file_load": 320,
            "open_by_handle_at": 304,
        },
    ),
    "aarch64": (
        0xC00000B7,
        {
            "socket": 198,
            "ptrace": 117,
            "process_vm_readv": 270,
            "process_vm_writev": 271,
            "bpf": 280,
            "perf_event_open": 241,
            "unshare": 97,
            "setns": 268,
            "mount": 40,
            "umount2": 39,
            "pivot_root": 41,
            "chroot": 51,
            "keyctl": 219,
            "add_key": 217,
            "request_key": 218,
            "userfaultfd": 282,
            "init_module": 105,
            "finit_module": 273,
            "delete_module": 106,
            "kexec_load": 104,
            "kexec_file_load": 294,
            "open_by_handle_at": 265,
        },
    ),
}
GENERIC_BLOCKED = {"io_uring_setup": 425, "io_uring_enter": 426, "io_uring_register": 427, "open_tree": 428,
                   "move_mount": 429, "fsopen": 430, "fsconfig": 431, "fsmount": 432, "fspick": 433,
                   "mount_setattr": 442}  # fmt: skip
CLONE3 = 435

libc = ctypes.CDLL(None, use_errno=True)
libc.syscall.restype = ctypes.c_long


def fail(message, code=125):
    os.write(2, f"repo-sandbox launcher: {message}\n".encode())
    os._exit(code)


def prctl(option, arg):
    if libc.prctl(option, ctypes.c_ulong(arg), 0, 0, 0) != 0:
        fail(f"prctl({option}) failed: {os.strerror(ctypes.get_errno())}")


def sys_call(number, *args):
    return libc.syscall(
        ctypes.c_long(number), *(a if isinstance(a, ctypes.c_char_p) else ctypes.c_long(a) for a in args)
    )


def landlock_abi():
    return sys_call(SYS_LANDLOCK[0], 0, 0, 1)  # LANDLOCK_CREATE_RULESET_VERSION


def open_without_links(path):
    """An O_PATH descriptor of the absolute `path`, walked from / without following any symlink: a repository
    entry swapped for a symlink (or under one) after the plan is granted nothing, not what the link names."""
    fd = os.open("/", os.O_PATH | os.O_DIRECTORY | os.O_CLOEXEC)
    try:
        parts = [part for part in path.split("/") if part]
        for index, part in enumerate(parts):
            if part == "..":
                raise OSError(18, "not a plain path")  # EXDEV
            child = os.open(part, os.O_PATH | os.O_NOFOLLOW | os.O_CLOEXEC, dir_fd=fd)
            os.close(fd)
            fd = child
            if index < len(parts) - 1 and not stat.S_ISDIR(os.fstat(fd).st_mode):
                raise OSError(20, "not a directory")  # ENOTDIR: a symlink on the way
        return fd
    except BaseException:
        os.close(fd)
        raise


def apply_landlock(rules, network):
    abi = landlock_abi()
    if abi < 1:
        fail("Landlock is not available")
    handled = (1 << 13) - 1
    if abi >= 2:
        handled |= 1 << 13
    if abi >= 3:
        handled |= 1 << 14
    if abi >= 5:
        handled |= 1 << 15
    fields = [handled]
    if abi >= 4:
        fields.append(0 if network else 3)  # deny TCP bind and connect
    if abi >= 6:
        fields.append(3)  # scope abstract unix sockets and signals to the domain
    attr = struct.pack(f"{len(fields)}Q", *fields)
    ruleset = sys_call(SYS_LANDLOCK[0], ctypes.c_char_p(attr), len(attr), 0)
    if ruleset < 0:
        fail(f"landlock_create_ruleset: {os.strerror(ctypes.get_errno())}")
    for path, kind, follow in rules:
        try:
            fd = os.open(path, os.O_PATH | os.O_CLOEXEC) if follow else open_without_links(path)
            mode = os.fstat(fd).st_mode
        except OSError:
            continue
        if stat.S_ISLNK(mode):
            os.close(fd)
            continue  # a repository symlink grants nothing; its target needs its own rule
        access = ACCESS[kind] & handled
        if not stat.S_ISDIR(mode):
            access &= FS_FILE_RIGHTS
        beneath = struct.pack("=Qi", access, fd)
        if sys_call(SYS_LANDLOCK[1], ruleset, 1, ctypes.c_char_p(beneath), 0) != 0:
            fail(f"landlock_add_rule({path}): {os.strerror(ctypes.get_errno())}")
        os.close(fd)
    prctl(PR_SET_NO_NEW_PRIVS, 1)
    if sys_call(SYS_LANDLOCK[2], ruleset, 0) != 0:
        fail(f"landlock_restrict_self: {os.strerror(ctypes.get_errno())}")
    os.close(ruleset)


def apply_seccomp(network):
    machine = os.uname().machine
    if machine not in BLOCKED:
        fail(f"no seccomp table for {machine}")
    arch, table = BLOCKED[machine]
    numbers = {**table, **GENERIC_BLOCKED}
    if network:
        numbers.pop("socket")
    eperm, enosys, allow, kill = 0x50000 | 1, 0x50000 | 38, 0x7FFF0000, 0x80000000
    prog = [(0x20, 0, 0, 4), (0x15, 1, 0, arch), (0x06, 0, 0, kill), (0x20, 0, 0, 0)]
    if machine == "x86_64":
        prog.append((0x35, 0, 1, 0x40000000))  # x32 ABI numbers
        prog.append((0x06, 0, 0, eperm))
    prog += [(0x15, 0, 1, CLONE3), (0x06, 0, 0, enosys)]  # no clone3: glibc falls back to clone
    for number in numbers.values():
        prog += [(0x15, 0, 1, number), (0x06, 0, 0, eperm)]
    prog.append((0x06, 0, 0, allow))
    raw = b"".join(struct.pack("HBBI", *ins) for ins in prog)
    buffer = ctypes.create_string_buffer(raw)
    fprog = struct.pack("HxxxxxxP", len(prog), ctypes.addressof(buffer))
    prctl(PR_SET_NO_NEW_PRIVS, 1)
    if libc.prctl(PR_SET_SECCOMP, SECCOMP_MODE_FILTER, ctypes.c_char_p(fprog), 0, 0) != 0:
        fail(f"seccomp: {os.strerror(ctypes.get_errno())}")


def set_rlimits(limits):
    import resource

    for name, value in limits.items():
        resource.setrlimit(getattr(resource, f"RLIMIT_{name}"), (value, value))


def descendants():
    found, pending = [], [os.getpid()]
    while pending:
        pid = pending.pop()
        try:
            tasks = os.listdir(f"/proc/{pid}/task")
        except OSError:
            continue
        for task in tasks:
            try:
                with open(f"/proc/{pid}/task/{task}/children") as handle:
                    children = [int(c) for c in handle.read().split()]
            except OSError:
                continue
            found += children
            pending += children
    return found


def kill_all():
    """SIGKILL and reap every descendant, including re-parented orphans, until none is left."""
    while True:
        for pid in descendants():
            with contextlib.suppress(OSError):
                os.kill(pid, signal.SIGKILL)
        try:
            while os.waitpid(-1, os.WNOHANG)[0] > 0:
                pass
        except ChildProcessError:
            return
        time.sleep(0.002)


def run(spec):
    argv = spec["argv"]
    child = os.fork()
    if child == 0:
        try:
            prctl(PR_SET_PDEATHSIG, signal.SIGKILL)
            for number in (signal.SIGTERM, signal.SIGINT, signal.SIGHUP, signal.SIGPIPE):
                signal.signal(number, signal.SIG_DFL)
            set_rlimits(spec.get("rlimits", {}))
            if spec.get("landlock"):
                apply_landlock(spec.get("rules", []), spec.get("network", False))
            if spec.get("seccomp"):
                apply_seccomp(spec.get("network", False))
            os.execve(spec["path"], argv, os.environ)
        except FileNotFoundError:
            fail(f"{argv[0]}: not found", 127)
        except BaseException as exc:  # noqa: BLE001
            fail(f"{argv[0]}: {exc}", 126)
    status = None
    while status is None:
        try:
            pid, raw = os.waitpid(-1, 0)
        except ChildProcessError:
            break
        if pid == child:
            status = raw
    kill_all()
    if status is None:
        os._exit(125)
    if os.WIFSIGNALED(status):
        os._exit(128 + os.WTERMSIG(status))
    os._exit(os.WEXITSTATUS(status))


def on_signal(number, frame):
    kill_all()
    os._exit(128 + number)


def main():
    spec = json.loads(sys.argv[1])
    prctl(PR_SET_CHILD_SUBREAPER, 1)
    for number in (signal.SIGTERM, signal.SIGINT, signal.SIGHUP):
        signal.signal(number, on_signal)
    prctl(PR_SET_PDEATHSIG, signal.SIGTERM)
    if os.getppid() != spec.get("parent", os.getppid()):
        kill_all()
        os._exit(125)
    run(spec)


if __name__ == "__main__":
    main()
