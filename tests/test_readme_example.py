"""The README's example runs: its Python block, against a real cluster controller (the URL
replaced by the fixture's), prints what a newcomer is told to expect."""

from __future__ import annotations

import asyncio
import contextlib
import io
from pathlib import Path

from pyjoynr.cluster_controller.controller import ClusterController
from tests.support.docs import python_blocks

README = Path(__file__).resolve().parents[1] / "README.md"


def readme_example() -> str:
    blocks = python_blocks(README)
    assert len(blocks) == 1, "the README has one Python example"
    return blocks[0]


async def test_the_readme_example_runs(cc: ClusterController) -> None:
    source = readme_example()
    assert 'connect("ws://127.0.0.1:4242/")' in source
    source = source.replace("ws://127.0.0.1:4242/", cc.websocket_address.url)
    # run as a script would, but inside this test's loop: asyncio.run becomes an await
    source = source.replace("asyncio.run(main())", "")
    namespace: dict[str, object] = {"__name__": "readme_example"}
    exec(compile(source, str(README), "exec"), namespace)
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        await asyncio.wait_for(namespace["main"](), 30)  # type: ignore[operator]
    assert out.getvalue() == "True FM4\n"
