"""Screenshots of `machiavelox play` for docs/play.md (not a test: a script).

    .venv/bin/python -m tests.client.screenshots [OUT_DIR]    # default: docs/

Starts a local cluster (as `machiavelox up`, rules clock 20 times faster), drives the client
headless at 80x24 through Textual's pilot (the scripted person of the screen tests), and saves
Textual's SVG export of each screen: the menu, the agorà's queue, a friendly lobby with its
code, the table during a smazzata, the help, the end. Each SVG is converted to PNG when
`rsvg-convert` (Debian's librsvg2-bin) is on the PATH; else the SVGs stay.
"""

from __future__ import annotations

import asyncio
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

from machiavelox.client.app import PlayApp
from machiavelox.local.up import launch, stop_all
from tests.client.person import Person, on, table_screen, until

SIZE = (80, 24)


class Shots:
    def __init__(self, app: PlayApp, out: Path) -> None:
        self.app = app
        self.out = out
        self.saved: list[Path] = []

    def take(self, name: str) -> None:
        svg = self.out / f"play-{name}.svg"
        text = self.app.export_screenshot(title=f"machiavelox play: {name}")
        # keep the spaces that open a styled run (an SVG renderer collapses them otherwise)
        svg.write_text(text.replace("<svg ", '<svg xml:space="preserve" ', 1))
        self.saved.append(svg)
        print(f"saved {svg}", flush=True)


async def shoot(address: str, out: Path) -> list[Path]:
    app = PlayApp(address, "ada")
    shots = Shots(app, out)
    async with app.run_test(size=SIZE) as pilot:
        await until(pilot, on(app, "MenuScreen"), 20, "the menu")
        shots.take("menu")
        await pilot.press("1")
        await until(pilot, on(app, "WaitScreen"), 20, "the queue")
        await pilot.pause(2.5)
        shots.take("queue")
        await pilot.press("escape")
        await until(pilot, on(app, "MenuScreen"), 20, "the menu")
        await pilot.press("5")
        await until(pilot, lambda: "invite code" in str(app.screen.query_one("#code").render()),
                    20, "the code")
        shots.take("lobby")
        await until(pilot, on(app, "TableScreen"), 30, "the table")
        screen = table_screen(app)
        person = Person(pilot, app)
        taken = {"table": False}

        async def step(_: int) -> None:
            m = screen.model
            if not taken["table"] and len(m.melds) >= 3 and m.pozzetto \
                    and person.decisions[-1].endswith("p"):
                await pilot.pause(0.2)
                shots.take("table")
                await pilot.press("question_mark")
                await pilot.pause(0.3)
                shots.take("help")
                await pilot.press("escape")
                taken["table"] = True

        await person.play_to_the_end(limit_s=240, on_step=step)
        await until(pilot, lambda: screen.model.result is not None, 20, "the result")
        await pilot.pause(0.5)
        shots.take("end")
    return shots.saved


def main(argv: list[str]) -> int:
    out = Path(argv[0] if argv else "docs").resolve()
    out.mkdir(parents=True, exist_ok=True)
    tmp = Path(tempfile.mkdtemp(prefix="machiavelox-shots-"))
    procs = launch(0, tmp, tmp, time_scale=20.0, bot_interval_s=0.5)
    try:
        saved = asyncio.run(shoot(procs["gateway"].address, out))
    finally:
        stop_all(procs)
    converter = shutil.which("rsvg-convert")
    if converter is None:
        print("rsvg-convert is not installed: the SVGs stay", flush=True)
        return 0
    for svg in saved:
        png = svg.with_suffix(".png")
        subprocess.run([converter, "-z", "1.0", str(svg), "-o", str(png)], check=True)
        svg.unlink()
        print(f"converted {png}", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
