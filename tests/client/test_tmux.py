"""`machiavelox play` in a real terminal: tmux runs it at 80x24 against a real local cluster;
the test types with send-keys and reads the screen with capture-pane (issue 15 item 1). It
uses its own tmux server (a socket of its own) and stops it."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from machiavelox.local.processes import Proc

BOT_INTERVAL_S = 1.0  # the practice bots (read by conftest's `cluster`)
pytestmark = [pytest.mark.timeout(180),
              pytest.mark.skipif(shutil.which("tmux") is None, reason="tmux is not installed")]
MACHIAVELOX = Path(sys.executable).with_name("machiavelox")


class Tmux:
    def __init__(self, socket: str) -> None:
        self.socket = socket

    def run(self, *args: str) -> str:
        done = subprocess.run(["tmux", "-L", self.socket, *args], capture_output=True,
                              text=True, timeout=10, check=False)
        return done.stdout

    def screen(self) -> str:
        return self.run("capture-pane", "-p", "-t", "play")

    def keys(self, *keys: str) -> None:
        self.run("send-keys", "-t", "play", *keys)

    def wait_for(self, text: str, timeout_s: float = 30.0) -> str:
        end = time.monotonic() + timeout_s
        screen = ""
        while time.monotonic() < end:
            screen = self.screen()
            if text in screen:
                return screen
            time.sleep(0.2)
        raise AssertionError(f"{text!r} never on the screen:\n{screen}")


@pytest.fixture
def tmux() -> Iterator[Tmux]:
    t = Tmux(f"machiavelox-test-{os.getpid()}")
    yield t
    t.run("kill-server")


def test_play_in_a_real_terminal(cluster: dict[str, Proc], tmux: Tmux) -> None:
    """The command starts in a terminal of 80x24, logs in, seats the person at a practice
    table with two bots, draws with `d` (the log says so), shows the help with `?`, asks
    before ABBANDONA and abandons with `y`, goes back to the menu with Enter and quits."""
    command = (f"{MACHIAVELOX} play --gateway {cluster['gateway'].address} --name tina "
               "--practice")
    tmux.run("new-session", "-d", "-s", "play", "-x", "80", "-y", "24", command)
    screen = tmux.wait_for("tina (you)")
    tmux.wait_for("live")
    assert "tallone" in screen and "pozzetto" in screen
    tmux.keys("d")
    tmux.wait_for("You drew")
    tmux.keys("?")
    help_screen = tmux.wait_for("Help")
    assert "Selecting" in help_screen and "draw from your tallone" in help_screen
    tmux.keys("Escape")  # (alone: an Escape followed at once by a key is read as Alt+key)
    end = time.monotonic() + 10
    while "Help" in tmux.screen() and time.monotonic() < end:
        time.sleep(0.2)
    tmux.wait_for("tina (you)")
    tmux.keys("q")
    tmux.wait_for("leave this smazzata now?")
    tmux.keys("y")
    tmux.wait_for("ABANDONED")
    tmux.keys("Enter")
    tmux.wait_for("welcome")
    lines = tmux.screen().splitlines()
    assert len(lines) <= 24 and all(len(line) <= 80 for line in lines)
    tmux.keys("6")  # Quit
    end = time.monotonic() + 10
    while time.monotonic() < end and "play" in tmux.run("list-sessions"):
        time.sleep(0.2)
    assert "play" not in tmux.run("list-sessions"), "the client quit"
