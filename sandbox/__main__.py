"""`python -m sandbox`: run the sandbox workspace until Ctrl-C and print how to reach it."""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import logging
import signal
from pathlib import Path

from .config import demo_workspace, load_workspace
from .server import Sandbox


def _parse() -> argparse.Namespace:
    parser = argparse.ArgumentParser(prog="python -m sandbox", description=__doc__)
    parser.add_argument("--host", default="127.0.0.1")
    parser.add_argument("--port", type=int, default=0, help="0 picks a free port (default)")
    parser.add_argument(
        "--request-url",
        default=None,
        help="the app's HTTP endpoint, e.g. http://127.0.0.1:3000/slack/events",
    )
    parser.add_argument(
        "--workspace",
        type=Path,
        default=None,
        help="a JSON workspace seed (users, groups, channels); default: the demo",
    )
    parser.add_argument("-v", "--verbose", action="store_true")
    return parser.parse_args()


async def _serve(options: argparse.Namespace) -> None:
    seed = load_workspace(options.workspace.read_text()) if options.workspace else demo_workspace()
    async with Sandbox(
        seed=seed, host=options.host, port=options.port, request_url=options.request_url
    ) as sb:
        request_url = sb.request_url or "(none yet: PUT /admin/request-url or Socket Mode)"
        banner = (
            f"Sandbox workspace:    {sb.base_url}/\n"
            f"SIGNOFF_SLACK_API_URL {sb.api_url}\n"
            f"SLACK_BOT_TOKEN       {sb.bot_token}\n"
            f"SLACK_APP_TOKEN       {sb.app_token}\n"
            f"SLACK_SIGNING_SECRET  {sb.signing_secret}\n"
            f"request URL           {request_url}"
        )
        print(banner, flush=True)
        # Its own handlers: a shell that starts it in the background makes it ignore SIGINT.
        stopping = asyncio.Event()
        loop = asyncio.get_running_loop()
        for sig in (signal.SIGINT, signal.SIGTERM):
            loop.add_signal_handler(sig, stopping.set)
        await stopping.wait()


def main() -> None:
    options = _parse()
    logging.basicConfig(
        level=logging.DEBUG if options.verbose else logging.INFO,
        format="%(asctime)s %(name)s %(levelname)s %(message)s",
    )
    with contextlib.suppress(KeyboardInterrupt):
        asyncio.run(_serve(options))


if __name__ == "__main__":
    main()
