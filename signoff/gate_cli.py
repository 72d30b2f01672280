"""The command line of ``signoff gate``: its options, the request they ask for, and the
exit statuses it documents."""

from __future__ import annotations

import argparse
import re
import uuid
from pathlib import Path

from pydantic import ValidationError

from bot.api.schemas import NewRequest, error_message
from storage.requests import Param, ParamValue

APPROVED_NO_COMMAND = 0
USAGE = 2
DENIED = 10
EXPIRED = 11
WITHDRAWN = 12
UNREACHABLE = 13
REFUSED = 14
CHECK_FAILED = 15
LOST = 16
USED = 17
FOLLOWED = 5
"""How many approvals asked again before its command started a gate follows."""
EXIT_CODES = {
    APPROVED_NO_COMMAND: "approved (no command given)",
    USAGE: "usage error: bad arguments or settings, or a COMMAND that cannot be run",
    DENIED: "denied: the command did not run",
    EXPIRED: "expired before anyone approved: the command did not run",
    WITHDRAWN: "withdrawn (by this gate too, when nothing expired it 10 minutes past its "
    "expiry), or this gate was stopped (Ctrl-C, SIGTERM): not run",
    UNREACHABLE: "could not reach Signoff: nothing is known to be decided; or approved, "
    "but Signoff could not be told the command starts: not run",
    REFUSED: "Signoff refused the request (token, channel, request unknown, its client at "
    "its pending limit, or its key used for another request), or its approval was asked "
    f"again {FOLLOWED} times before the command could start: not run",
    CHECK_FAILED: "the --check command failed, or kept changing: the command did not run",
    LOST: "lost from Signoff's Redis before anyone approved: the command did not run",
    USED: "approved, but an earlier gate with this --idempotency-key started the command "
    "and did not report how it ended, or did not run it: not run again",
}
"""Every exit status of the gate that is not the command's own."""

_DURATION = re.compile(r"^(\d+)([smhd])$")
_UNITS = {"s": 1, "m": 60, "h": 3600, "d": 86400}
OPTIONS = {
    "title": "--title",
    "details": "--details",
    "params": "--param/--editable",
    "channel": "--channel",
    "approvers": "--approvers",
    "anyone_in_channel": "--anyone-in-channel",
    "min_approvals": "--min-approvals",
    "expires_in": "--expires",
    "dangerous": "--dangerous",
    "undo_window": "--undo-window",
    "if_nobody_decides": "--if-nobody-decides",
    "items": "--item",
    "allow_reply": "--allow-reply",
    "callback_url": "--callback-url",
    "idempotency_key": "--idempotency-key",
    "acts_on": "--check",
}
"""Each field of the request as the option that sets it: a usage error names what the
user typed, not the API's field (which pydantic and the server's 400s name)."""
_FIELDS = re.compile(r"\b(" + "|".join(OPTIONS) + r")\b(?:=(\S+))?")


def request_of(args: argparse.Namespace) -> NewRequest:
    """The request the options ask for; ValueError (or pydantic's) names what is wrong."""
    details = args.details or ""
    if args.details_file is not None:
        try:
            details = Path(args.details_file).read_text(errors="replace")
        except OSError as exc:
            raise ValueError(f"--details-file {args.details_file!r}: {exc.strerror}") from exc
    params = [_param(text, "--param") for text in args.param]
    params += [_param(text, "--editable") for text in args.editable]
    try:
        return _request(args, details, params)
    except ValidationError as exc:
        first = exc.errors()[0]
        if args.details_file is None or first["loc"] != ("details",):
            raise
        # Named as typed: the details came from the file, not from --details.
        raise ValueError(f"--details-file {args.details_file!r}: {error_message(first)}") from exc


def _request(args: argparse.Namespace, details: str, params: list[Param]) -> NewRequest:
    """The request the options give, validated as the server validates it."""
    return NewRequest(
        title=args.title,
        details=details,
        params=params,
        channel=args.channel,
        approvers=[a.strip() for a in args.approvers.split(",") if a.strip()],
        anyone_in_channel=args.anyone_in_channel,
        min_approvals=args.min_approvals,
        expires_in=seconds(args.expires, "--expires"),
        dangerous=args.dangerous,
        undo_window=seconds(args.undo_window, "--undo-window") if args.undo_window else None,
        if_nobody_decides=args.if_nobody_decides,
        items=args.item,
        allow_reply=args.allow_reply,
        callback_url=args.callback_url,
        # What --check prints is set once it ran; checked now, it cannot be refused after.
        acts_on="" if args.check is not None else None,
        # A key always, so retrying the post after a network blip posts one card.
        idempotency_key=args.idempotency_key or f"gate-{uuid.uuid4().hex}",
    )


def _param(text: str, option: str) -> Param:
    """The param ``--param`` or ``--editable`` (``option``) gives; ValueError names it."""
    name, sep, raw = text.partition("=")
    if not sep:
        raise ValueError(f"{option} {text!r}: use NAME=VALUE")
    value: ParamValue = raw
    kind = "string"
    if re.fullmatch(r"-?\d{1,15}", raw) and str(int(raw)) == raw:  # as typed: not 007, -0
        value, kind = int(raw), "integer"
    elif raw in ("true", "false"):
        value, kind = raw == "true", "boolean"
    editable = option == "--editable"
    try:
        return Param(name=name, type=kind, value=value, editable=editable)  # type: ignore[arg-type]
    except ValidationError as exc:
        raise ValueError(f"{option} {text!r}: {error_message(exc.errors()[0])}") from exc


def usage_of(exc: ValueError) -> str:
    """What is wrong with the options, as ``request_of`` (or pydantic within it) says."""
    if not isinstance(exc, ValidationError):
        return str(exc)
    first = exc.errors()[0]
    where = ".".join(str(p) for p in first["loc"]) or None
    bounds = {"less_than_equal": ("le", "at most"), "greater_than_equal": ("ge", "at least")}
    if where in ("expires_in", "undo_window") and first["type"] in bounds:
        key, word = bounds[first["type"]]  # a duration's bound, as the option takes one
        return as_typed(where, f"{word} {_duration((first.get('ctx') or {})[key])}")
    return as_typed(where, error_message(first), first["input"])


def _duration(seconds: int) -> str:
    """``seconds`` as ``--expires`` takes it, in the largest unit that holds it whole."""
    unit = next(u for u in "dhms" if seconds % _UNITS[u] == 0)
    return f"{seconds // _UNITS[unit]}{unit}"


def as_typed(where: str | None, message: str, value: object = None) -> str:
    """``message`` about the request's field ``where`` (a path such as ``approvers.0``;
    None: the request as a whole, whose message names fields) told by the options that
    set them, with the ``value`` given when one item of a list is wrong."""
    if where is None:
        return _FIELDS.sub(lambda m: " ".join(filter(None, (OPTIONS[m[1]], m[2]))), message)
    name, _, index = where.partition(".")
    typed = f" {value}" if index and isinstance(value, str) else ""
    return f"{OPTIONS.get(name, name)}{typed}: {message}"


def seconds(text: str, option: str) -> int:
    """``90s``, ``30m``, ``8h`` or ``2d`` in seconds; ValueError names ``option``."""
    match = _DURATION.match(text.strip())
    if not match:
        raise ValueError(f"{option} {text!r}: use a number and a unit, such as 90s, 8h or 2d")
    return int(match[1]) * _UNITS[match[2]]


def parse_args(argv: list[str]) -> tuple[argparse.Namespace, list[str]]:
    """The gate's options, and the command after ``--`` (empty when none)."""
    command: list[str] = []
    if "--" in argv:
        cut = argv.index("--")
        argv, command = argv[:cut], argv[cut + 1 :]
    parser = argparse.ArgumentParser(
        prog="signoff gate",
        usage="%(prog)s --title TITLE --channel CHANNEL [options] [-- COMMAND [ARG ...]]",
        description="Ask for approval in Slack; run COMMAND only if approved. It asks the "
        "Signoff server at SIGNOFF_URL with the client token in SIGNOFF_TOKEN (from signoff "
        "token create), both read from the environment.",
        epilog="exit status: the command's own when it ran; otherwise "
        + "; ".join(f"{code} {text}" for code, text in EXIT_CODES.items()),
    )
    parser.add_argument("--title", required=True, help="the card's headline")
    parser.add_argument("--channel", required=True, help="channel id (C0123ABCD)")
    parser.add_argument(
        "--approvers",
        default="",
        help="comma-separated user (U…) and user group (S…) ids, or group handles (@oncall)",
    )
    parser.add_argument(
        "--anyone-in-channel",
        action="store_true",
        help="every member of the channel may decide (else only --approvers)",
    )
    parser.add_argument(
        "--min-approvals",
        type=int,
        default=1,
        help="approvals needed (default 1); any deny ends it; not with --editable or --allow-reply",
    )
    parser.add_argument("--expires", default="24h", help="e.g. 30m, 8h, 2d (default 24h)")
    parser.add_argument(
        "--undo-window", help="e.g. 60s: the deciding click can be undone this long first"
    )
    parser.add_argument(
        "--if-nobody-decides",
        choices=("deny", "approve"),
        default="deny",
        help="once --expires is reached: deny (default) or, for a low-risk job, approve",
    )
    parser.add_argument(
        "--check",
        metavar="CMD",
        help="a shell command printing what COMMAND will act on: shown on the card, run "
        "again once approved, and asked again (not run) if its output changed",
    )
    parser.add_argument(
        "--item",
        action="append",
        default=[],
        metavar="TEXT",
        help="one of several things approved one by one on one card (repeat it); the "
        "command gets the approved ones in SIGNOFF_APPROVED_ITEMS, one per line",
    )
    details = parser.add_mutually_exclusive_group()
    details.add_argument("--details", help="text shown on the card (escaped)")
    details.add_argument("--details-file", help="read the details from this file")
    parser.add_argument(
        "--param",
        action="append",
        default=[],
        metavar="NAME=VALUE",
        help="a value shown on the card; the command gets it as SIGNOFF_PARAM_<NAME>",
    )
    parser.add_argument(
        "--editable",
        action="append",
        default=[],
        metavar="NAME=VALUE",
        help="a param approvers may change; the command gets it as SIGNOFF_PARAM_<NAME>",
    )
    parser.add_argument(
        "--allow-reply",
        action="store_true",
        help="approvers may answer with text instead; the command gets it as SIGNOFF_REPLY",
    )
    parser.add_argument("--dangerous", action="store_true", help="approving asks to confirm")
    parser.add_argument("--callback-url", help="webhook for each decision (signed)")
    parser.add_argument(
        "--idempotency-key", help="the same key again re-attaches to the same request"
    )
    parser.add_argument("--json", action="store_true", help="print the decision as JSON")
    options, extra = parser.parse_known_args(argv)
    if extra:  # ``signoff gate ... ./cleanup.sh``: a command given without its ``--``
        hint = "" if extra[0].startswith("-") else "; put the command to run last, after --"
        parser.error(f"unrecognized arguments: {' '.join(extra)}{hint}")
    return options, command
