"""``python -m demo``: run the Signoff demo until Ctrl-C and print the one address to open."""

from __future__ import annotations

import argparse
import asyncio
import errno
import logging
import os
import shlex
import signal
import sys
import webbrowser
from pathlib import Path

from .places import default_data_dir, last_port, remember_port


def parse(argv: list[str] | None) -> argparse.Namespace:
    """The demo's options; standard library only, so ``./run`` checks them before it installs."""
    parser = argparse.ArgumentParser(
        prog="./run demo",
        description="Signoff in a local Slack workspace: approve, deny and edit what agents do.",
    )
    parser.add_argument(
        "--port",
        type=_port,
        default=0,
        help="the page's port (default: the last one used, if free; else any free one)",
    )
    parser.add_argument(
        "--data-dir",
        type=Path,
        default=None,
        help=f"where the demo keeps its state (default: {default_data_dir()})",
    )
    parser.add_argument("--no-browser", action="store_true", help="do not open a browser")
    parser.add_argument("-v", "--verbose", action="store_true", help="log what the bot does")
    return parser.parse_args(argv)


def _port(text: str) -> int:
    """``--port``: 0 (any free one) to 65535. Not the CLI's own check: ``./run demo --help``
    answers before anything is installed, so this module imports the standard library only."""
    try:
        port = int(text)
    except ValueError:
        port = -1
    if not 0 <= port <= 65535:
        raise argparse.ArgumentTypeError(f"{text!r} is not a port: give 0 to 65535")
    return port


def _has_display() -> bool:
    """A graphical browser can open: macOS, Windows, or a Linux desktop session."""
    if sys.platform in ("darwin", "win32"):
        return True
    return bool(os.environ.get("DISPLAY") or os.environ.get("WAYLAND_DISPLAY"))


async def _run(options: argparse.Namespace) -> None:
    stopping = asyncio.Event()
    loop = asyncio.get_running_loop()
    for sig in (signal.SIGINT, signal.SIGTERM):
        loop.add_signal_handler(sig, stopping.set)
    from .stack import DemoStack  # after parsing: --help needs nothing installed

    data_dir = default_data_dir()
    if options.data_dir is not None:  # relative to where ./run was typed, not the checkout
        data_dir = Path(os.environ.get("SIGNOFF_CALLER_DIR", ".")) / options.data_dir
        data_dir = data_dir.resolve()
    port = options.port or last_port(data_dir)
    async with DemoStack(data_dir=data_dir, port=port) as stack:
        remember_port(data_dir, stack.port)
        print(f"Signoff demo: {stack.url}", flush=True)
        print(f"  state in {data_dir}; Ctrl-C stops it", flush=True)
        print(f"  The demo job's webhooks are signed with {stack.webhook_secret}", flush=True)
        print("  A shell job gated in Slack: run this in another terminal, then approve it")
        print("  in #ops on the page:", flush=True)
        print(f"    {stack.gate_command}", flush=True)
        print("  Its audit trail, and its API clients, from another terminal:", flush=True)
        for command in ("audit", "token list"):
            redis_url = shlex.quote(stack.redis_url)  # its data directory may hold a space
            print(f"    REDIS_URL={redis_url} {stack.signoff} {command}", flush=True)
        if not options.no_browser and _has_display():
            await asyncio.to_thread(webbrowser.open, stack.url)
        await stopping.wait()
    again = "./run demo" + (f" --data-dir {shlex.quote(str(data_dir))}" if options.data_dir else "")
    print(
        f"Stopped the demo. What was pending is kept in {data_dir}; {again} shows it again.",
        file=sys.stderr,
        flush=True,
    )


def main(argv: list[str] | None = None) -> int:
    options = parse(argv)
    logging.basicConfig(
        level=logging.INFO if options.verbose else logging.WARNING,
        format="%(asctime)s %(levelname)s %(name)s: %(message)s",
    )
    from bot.errors import BotError
    from sandbox import SandboxError
    from storage.errors import StorageError

    from .errors import DemoError

    try:
        asyncio.run(_run(options))
    except OSError as exc:
        if exc.errno == errno.EADDRINUSE and options.port:
            exc = OSError(
                f"port {options.port} is in use: pass another --port, or leave --port out "
                "for a free one"
            )
        print(f"demo: {exc}", file=sys.stderr)
        return 2
    except (DemoError, BotError, SandboxError, StorageError) as exc:
        print(f"demo: {exc}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:  # Ctrl-C while starting: everything started is stopped
        return 130
    return 0


if __name__ == "__main__":
    sys.exit(main())
