"""The user guide's examples run as shown, and its links lead somewhere (issue 29).

Every fenced block of README.md and docs/*.md whose language is ``bash``, ``sh``, ``shell``,
``console`` or ``python`` runs, one test per block (its id names the page and line). A page's
blocks run in order, in one temporary folder per page that stands in for the repository root:
``config/`` and ``.venv`` there are links to the real ones, so a block can write ``results/``,
``demos/`` or ``my_package/`` without touching the repository. A user follows a page the same way,
top to bottom, so a block may use what an earlier block of its page made.

- ``bash``/``sh``/``shell``: ``bash -e -c BLOCK`` with this venv's ``bin`` first on PATH and no
  PYTHONPATH: a user's shell after ``source .venv/bin/activate``.
- ``console``: each ``$ command`` runs like that; the lines shown after it must appear in its
  output (stdout and stderr), in order, ``...`` matching anything; a command shown without
  output must exit 0.
- ``python``: run as a script in the page's folder, the repository root on PYTHONPATH.
- A ``python`` or ``yaml`` block whose first line is ``# <path>`` (``# my_package/envs.py``) is
  that file: it is written there for the blocks after it, not run on its own.
- ``ctrl-c`` after the language (```` ```bash ctrl-c ````) marks a long training run: once it
  prints its first summary line (``<Behavior>. Step: N.``) the test presses Ctrl-C (SIGINT to the
  block's processes) and expects what the docs promise, a clean exit 0 with everything saved.
- The ports the docs name (``DOC_PORTS``) are swapped for free ones on loopback.

Blocks in any other language (``text``, ``yaml``, ``json``) do not run: they are for
placeholders (a Unity build, the Editor, other machines, a Ray cluster) and for set-up commands
(``make setup``) a test must not run. Keep those few.
"""

from __future__ import annotations

import os
import re
import signal
import socket
import subprocess
import sys
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
PAGES = sorted([ROOT / "README.md", *(ROOT / "docs").glob("*.md")])

SHELL = frozenset({"bash", "sh", "shell"})
CONSOLE = "console"
PYTHON = "python"
FILE_LANGUAGES = frozenset({"python", "yaml", "yml"})
RUN_LANGUAGES = SHELL | {CONSOLE, PYTHON}

FENCE = re.compile(r"^(?P<fence>`{3,}|~{3,})(?P<info>[^`]*)$")
FILE_HEADER = re.compile(r"^#\s*(?P<path>[\w.-]+(?:/[\w.-]+)*\.(?:py|ya?ml))\s*$")
SUMMARY = re.compile(r"\. Step: \d+\.")  # the console's summary line: "3DBall. Step: 12000. ..."
DOC_PORTS = ("9900",)  # ports the docs name in runnable blocks (the policy server's)
TIMEOUT_S = 180.0
CTRL_C_GRACE_S = 60.0  # from Ctrl-C to the end of the run (it saves and exports)


@dataclass(frozen=True)
class Block:
    """One fenced block: ``line`` is the line of its opening fence (1-based)."""

    page: Path
    line: int
    language: str
    options: tuple[str, ...]
    text: str

    @property
    def where(self) -> str:
        return f"{self.page.relative_to(ROOT)}:{self.line}"

    @property
    def file(self) -> str | None:
        """The path a file block names in its first line, or None."""
        if self.language not in FILE_LANGUAGES:
            return None
        first = self.text.split("\n", 1)[0]
        match = FILE_HEADER.match(first)
        return match["path"] if match else None


def parse_blocks(page: Path) -> list[Block]:
    """The fenced blocks of ``page`` (fences at column 0)."""
    blocks = []
    lines = page.read_text(encoding="utf-8").splitlines()
    i = 0
    while i < len(lines):
        opening = FENCE.match(lines[i])
        if opening is None:
            i += 1
            continue
        fence, info = opening["fence"], opening["info"].split()
        start, body = i, []
        i += 1
        while i < len(lines) and not (lines[i].startswith(fence) and not lines[i].strip(fence[0]).strip()):
            body.append(lines[i])
            i += 1
        i += 1
        language = info[0].lower() if info else ""
        blocks.append(Block(page, start + 1, language, tuple(info[1:]), "\n".join(body) + "\n"))
    return blocks


def runnable(block: Block) -> bool:
    return block.language in RUN_LANGUAGES or block.file is not None


BLOCKS = [block for page in PAGES for block in parse_blocks(page) if runnable(block)]


# ---------------------------------------------------------------- running blocks


def free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def shell_env() -> dict[str, str]:
    """A user's shell with the venv active: its bin first on PATH, nothing else of ours."""
    env = dict(os.environ)
    env.pop("PYTHONPATH", None)
    env.pop("AGENTS_LEARN_SERVER_TOKEN", None)
    env["PATH"] = str(Path(sys.executable).parent) + os.pathsep + env.get("PATH", "")
    return env


def run(args: list[str], folder: Path, env: dict[str, str], *, ctrl_c: bool = False) -> tuple[int, str]:
    """(exit code, stdout and stderr) of ``args`` in ``folder``, in a process group of its own;
    with ``ctrl_c``, SIGINT to the group once a summary line is out. Whatever the group still
    runs at the end (a background job) is killed."""
    process = subprocess.Popen(
        args,
        cwd=folder,
        env=env,
        stdin=subprocess.DEVNULL,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
        start_new_session=True,
    )
    lines: list[str] = []
    summary = threading.Event()

    def read() -> None:
        assert process.stdout is not None
        for line in process.stdout:
            lines.append(line)
            if SUMMARY.search(line):
                summary.set()

    reader = threading.Thread(target=read, daemon=True)
    reader.start()
    deadline = time.monotonic() + TIMEOUT_S
    try:
        if ctrl_c:
            while process.poll() is None and not summary.wait(0.1):
                if time.monotonic() > deadline:
                    raise subprocess.TimeoutExpired(args, TIMEOUT_S)
            if process.poll() is None:
                os.killpg(process.pid, signal.SIGINT)
                deadline = min(deadline, time.monotonic() + CTRL_C_GRACE_S)
        process.wait(timeout=max(0.1, deadline - time.monotonic()))
    except subprocess.TimeoutExpired:
        _kill_group(process.pid)
        process.wait()
        reader.join(5)
        pytest.fail(f"did not finish in time; its output ends:\n{''.join(lines)[-4000:]}")
    finally:
        _kill_group(process.pid)
    reader.join(5)
    return process.returncode, "".join(lines)


def _kill_group(pgid: int) -> None:
    try:
        os.killpg(pgid, signal.SIGKILL)
    except (ProcessLookupError, PermissionError):
        pass


def expected_lines(shown: list[str]) -> list[re.Pattern[str]]:
    """Patterns of the output lines a console block shows (``...`` matches anything)."""
    patterns = []
    for line in shown:
        words = " ".join(line.split())
        if words and words != "...":
            parts = [re.escape(part) for part in words.split("...")]
            patterns.append(re.compile(".*".join(parts)))
    return patterns


def console_commands(text: str) -> list[tuple[str, list[str]]]:
    """(command, output lines shown after it) for every ``$ `` line."""
    commands: list[tuple[str, list[str]]] = []
    for line in text.splitlines():
        if line.startswith("$ "):
            commands.append((line[2:], []))
        elif commands:
            commands[-1][1].append(line)
        elif line.strip():
            raise AssertionError(f"console block: output before the first '$ ' command: {line!r}")
    return commands


@dataclass
class PageRun:
    """One page's folder and how far its blocks have run."""

    folder: Path
    ports: dict[str, str]
    done: set[int] = field(default_factory=set)
    failed: str | None = None

    def substitute(self, text: str) -> str:
        for port, free in self.ports.items():
            text = re.sub(rf"(?<!\d){port}(?!\d)", free, text)
        return text

    def execute(self, block: Block) -> None:
        text = self.substitute(block.text)
        if block.file is not None:
            target = (self.folder / block.file).resolve()
            assert target.is_relative_to(self.folder.resolve()), f"{block.where}: {block.file} leaves the folder"
            target.parent.mkdir(parents=True, exist_ok=True)
            target.write_text(text, encoding="utf-8")
        elif block.language in SHELL:
            code, output = run(["bash", "-e", "-c", text], self.folder, shell_env(), ctrl_c="ctrl-c" in block.options)
            assert code == 0, f"{block.where}: exit code {code}; output:\n{output[-6000:]}"
        elif block.language == CONSOLE:
            for command, shown in console_commands(text):
                code, output = run(["bash", "-c", command], self.folder, shell_env())
                self.check_console(block, command, shown, code, output)
        elif block.language == PYTHON:
            script = self.folder / f".block-{block.line}.py"
            script.write_text(text, encoding="utf-8")
            env = dict(os.environ, PYTHONPATH=str(ROOT))
            code, output = run([sys.executable, str(script)], self.folder, env)
            assert code == 0, f"{block.where}: exit code {code}; output:\n{output[-6000:]}"

    @staticmethod
    def check_console(block: Block, command: str, shown: list[str], code: int, output: str) -> None:
        patterns = expected_lines(shown)
        if not patterns:
            assert code == 0, f"{block.where}: `{command}` exit code {code}; output:\n{output[-6000:]}"
            return
        out_lines = [" ".join(line.split()) for line in output.splitlines()]
        at = 0
        for pattern in patterns:
            while at < len(out_lines) and not pattern.search(out_lines[at]):
                at += 1
            assert at < len(out_lines), (
                f"{block.where}: `{command}` did not print {pattern.pattern!r} (in this order); "
                f"exit code {code}, output:\n{output[-6000:]}"
            )
            at += 1


@pytest.fixture(scope="module")
def page_runs() -> dict[Path, PageRun]:
    """Each page's run so far, shared by the page's blocks."""
    return {}


def page_run(runs: dict[Path, PageRun], page: Path, factory: pytest.TempPathFactory) -> PageRun:
    if page not in runs:
        folder = factory.mktemp(page.stem)
        (folder / "config").symlink_to(ROOT / "config", target_is_directory=True)
        (folder / ".venv").symlink_to(Path(sys.prefix), target_is_directory=True)
        runs[page] = PageRun(folder, {port: str(free_port()) for port in DOC_PORTS})
    return runs[page]


@pytest.mark.slow  # runs the CLI and trains, in subprocesses
@pytest.mark.parametrize("block", BLOCKS, ids=[b.where for b in BLOCKS])
def test_block_runs_as_shown(
    block: Block, page_runs: dict[Path, PageRun], tmp_path_factory: pytest.TempPathFactory
) -> None:
    state = page_run(page_runs, block.page, tmp_path_factory)
    # A page is followed top to bottom: its earlier blocks run first (when selected alone).
    for step in [b for b in BLOCKS if b.page == block.page and b.line < block.line] + [block]:
        if state.failed is not None:
            pytest.skip(f"an earlier block of the page failed: {state.failed}")
        if step.line not in state.done:
            try:
                state.execute(step)
            except BaseException:
                state.failed = step.where
                raise
            state.done.add(step.line)


# ---------------------------------------------------------------- the pages themselves

LINK = re.compile(r"!?\[[^\]]*\]\((?P<target>[^)\s]+)(?:\s+\"[^\"]*\")?\)")
INLINE_CODE = re.compile(r"`[^`\n]*`")


def prose(page: Path) -> str:
    """``page`` without its fenced blocks and inline code (links there are not links)."""
    kept, fence = [], None
    for line in page.read_text(encoding="utf-8").splitlines():
        opening = FENCE.match(line)
        if fence is None and opening is not None:
            fence = opening["fence"]
        elif fence is not None and line.startswith(fence) and not line.strip(fence[0]).strip():
            fence = None
        elif fence is None:
            kept.append(INLINE_CODE.sub("", line))
    return "\n".join(kept)


def slug(heading: str) -> str:
    """GitHub's anchor of a heading: lower case, punctuation out, spaces to hyphens."""
    text = re.sub(r"\[([^\]]*)\]\([^)]*\)", r"\1", heading.strip().lower())
    text = re.sub(r"[^\w\- ]", "", text)
    return text.replace(" ", "-")


def anchors(page: Path) -> set[str]:
    found: set[str] = set()
    for line in prose(page).splitlines():
        match = re.match(r"^#{1,6}\s+(.*?)\s*#*\s*$", line)
        if match:
            base = slug(match[1])
            name, n = base, 1
            while name in found:
                name, n = f"{base}-{n}", n + 1
            found.add(name)
    return found


@pytest.mark.parametrize("page", PAGES, ids=[str(p.relative_to(ROOT)) for p in PAGES])
def test_relative_links_lead_somewhere(page: Path) -> None:
    broken = []
    for match in LINK.finditer(prose(page)):
        target = match["target"]
        if re.match(r"^[a-z][a-z0-9+.-]*:", target):
            continue  # http:, https:, mailto:
        path_part, _, anchor = target.partition("#")
        linked = (page.parent / path_part).resolve() if path_part else page
        if not linked.exists():
            broken.append(f"{target}: {linked} does not exist")
        elif anchor and linked.suffix == ".md" and anchor not in anchors(linked):
            broken.append(f"{target}: no heading #{anchor} in {linked.relative_to(ROOT)}")
    assert not broken, "\n".join(broken)


def test_every_page_is_in_the_index_and_the_readme() -> None:
    pages = {p.name for p in (ROOT / "docs").glob("*.md")} - {"index.md"}
    assert pages, "docs/ has no pages"
    for listing, prefix in ((ROOT / "docs" / "index.md", ""), (ROOT / "README.md", "docs/")):
        linked = {m["target"].partition("#")[0] for m in LINK.finditer(prose(listing))}
        missing = sorted(p for p in pages if prefix + p not in linked)
        assert not missing, f"{listing.relative_to(ROOT)} does not link {missing}"


def test_fences_start_at_the_margin() -> None:
    """An indented fence would not be found, so its block would silently never run."""
    indented = [
        f"{page.relative_to(ROOT)}:{n}"
        for page in PAGES
        for n, line in enumerate(page.read_text(encoding="utf-8").splitlines(), 1)
        if re.match(r"^\s+(```|~~~)", line)
    ]
    assert not indented, indented
