"""`python -m sandbox`: run the sandbox workspace until Ctrl-C and print how to reach it."""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import errno
import logging
import shlex
import signal
import sys
from pathlib import Path

from .config import WorkspaceSeed, demo_workspace, load_workspace
from .errors import SandboxError
from .server import Sandbox


def _parse() -> argparse.Namespace:
    parser = argparse.ArgumentParser(prog="python -m sandbox", description=__doc__)
    parser.add_argument("--host", default="127.0.0.1")
    parser.add_argument("--port", type=_port, default=0, help="0 picks a free port (default)")
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


def _port(text: str) -> int:
    """``--port``: 0 (any free one) to 65535, refused here rather than by bind()."""
    try:
        port = int(text)
    except ValueError:
        port = -1
    if not 0 <= port <= 65535:
        raise argparse.ArgumentTypeError(f"{text!r} is not a port: give 0 to 65535")
    return port


def _seed(path: Path | None) -> WorkspaceSeed:
    """The workspace ``--workspace`` names, or the demo's; a file it cannot read is a
    ``SandboxError`` naming it."""
    if path is None:
        return demo_workspace()
    try:
        text = path.read_text()
    except OSError as exc:
        raise SandboxError(f"--workspace {path}: {exc.strerror or exc}") from exc
    return load_workspace(text)


async def _serve(options: argparse.Namespace) -> None:
    seed = _seed(options.workspace)
    async with Sandbox(
        seed=seed, host=options.host, port=options.port, request_url=options.request_url
    ) as sb:
        request_url = sb.request_url or "(none yet: PUT /admin/request-url or Socket Mode)"
        settings = {
            "SIGNOFF_SLACK_API_URL": sb.api_url,
            "SLACK_BOT_TOKEN": sb.bot_token,
            "SLACK_APP_TOKEN": sb.app_token,
            "SLACK_SIGNING_SECRET": sb.signing_secret,
        }
        lines = [
            f"Sandbox workspace: {sb.base_url}/",
            f"Request URL: {request_url}",
            "Signoff's settings for it, to paste into the shell that starts signoff:",
            *(f"export {name}={shlex.quote(value)}" for name, value in settings.items()),
        ]
        print("\n".join(lines), flush=True)
        # Its own handlers: a shell that starts it in the background makes it ignore SIGINT.
        stopping = asyncio.Event()
        loop = asyncio.get_running_loop()
        for sig in (signal.SIGINT, signal.SIGTERM):
            loop.add_signal_handler(sig, stopping.set)
        await stopping.wait()


def main() -> int:
    """Serve until Ctrl-C; a workspace or port it cannot use is one line and exit 2."""
    options = _parse()
    logging.basicConfig(
        level=logging.DEBUG if options.verbose else logging.INFO,
        format="%(asctime)s %(name)s %(levelname)s %(message)s",
    )
    try:
        with contextlib.suppress(KeyboardInterrupt):
            asyncio.run(_serve(options))
    except OSError as exc:
        said = str(exc)
        if exc.errno == errno.EADDRINUSE:
            said = f"port {options.port} is in use: pass another --port, or 0 for a free one"
        print(f"python -m sandbox: {said}", file=sys.stderr)
        return 2
    except SandboxError as exc:
        print(f"python -m sandbox: {exc}", file=sys.stderr)
        return 2
    return 0


if __name__ == "__main__":
    sys.exit(main())
