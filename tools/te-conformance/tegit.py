"""Reads files of a TransformerEngine git checkout at a tag, without checking anything out."""

import subprocess
from functools import lru_cache
from pathlib import Path


class TeCheckout:
    def __init__(self, path: Path):
        self.path = Path(path)
        git_dir = subprocess.run(["git", "-C", str(self.path), "rev-parse", "--git-dir"],
                                 capture_output=True, text=True)
        if git_dir.returncode != 0:
            raise SystemExit(f"{path}: not a git checkout of TransformerEngine ({git_dir.stderr.strip()})")

    @lru_cache(maxsize=None)
    def show(self, tag: str, path: str) -> str:
        result = subprocess.run(["git", "-C", str(self.path), "show", f"{tag}:{path}"],
                                capture_output=True, text=True)
        if result.returncode != 0:
            raise FileNotFoundError(f"{tag}:{path}: {result.stderr.strip()}")
        return result.stdout

    def exists(self, tag: str, path: str) -> bool:
        try:
            self.show(tag, path)
            return True
        except FileNotFoundError:
            return False

    @lru_cache(maxsize=None)
    def version(self, tag: str) -> str:
        """The version TE reports at the tag (build_tools/VERSION.txt or VERSION)."""
        for path in ("build_tools/VERSION.txt", "VERSION.txt", "VERSION"):
            if self.exists(tag, path):
                return self.show(tag, path).strip()
        raise FileNotFoundError(f"{tag}: no VERSION file")

    def grep(self, tag: str, pattern: str, under: str):
        """Paths under `under` whose text at the tag matches the fixed string pattern."""
        result = subprocess.run(["git", "-C", str(self.path), "grep", "-l", "-F", pattern, tag, "--", under],
                                capture_output=True, text=True)
        return sorted(line.split(":", 1)[1] for line in result.stdout.splitlines())

    def commit(self, tag: str) -> str:
        return subprocess.run(["git", "-C", str(self.path), "rev-parse", f"{tag}^{{commit}}"],
                              capture_output=True, text=True, check=True).stdout.strip()
