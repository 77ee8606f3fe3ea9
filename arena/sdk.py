"""Write a trick-arena bot in Python: subclass :class:`Bot`, call :func:`serve`.

::

    from arena.sdk import Bot, serve

    class Cautious(Bot):
        name = "cautious"

        def bid(self, view):
            return min(view.legal)

        def play(self, view):
            return min(view.legal)

    if __name__ == "__main__":
        serve(Cautious())

Every method gets a :class:`~arena.rules.View` (domain types, no protobuf): the seat's
hand, the public history and ``view.legal``, the actions allowed. Cards are ints (see
``arena.rules.cards``: ``card_symbol``, ``suit_of``, ``rank_of``). The arena starts the
bot with ``ARENA_BOT_LISTEN`` set; by hand, pass ``--listen 127.0.0.1:50051``. A bot
served to other machines takes ``--tls-cert``/``--tls-key`` (TLS) and ``--token`` (every
call but the health check must carry ``authorization: Bearer <token>``), or the variables
``ARENA_BOT_TLS_CERT``, ``ARENA_BOT_TLS_KEY`` and ``ARENA_BOT_TOKEN``.
"""

from __future__ import annotations

import argparse
import contextlib
import hmac
import logging
import os
import signal
import sys
import threading
import time
from collections.abc import Callable, Sequence
from concurrent import futures
from typing import Any, ClassVar

import grpc
from grpc_health.v1 import health, health_pb2, health_pb2_grpc
from grpc_reflection.v1alpha import reflection

from arena.model.results import BotInfo, GameResult, RoundResult
from arena.rules import Decision, View
from arena.rules.cards import Card, Suit, most_held_suit
from arena.v1 import bot_pb2, bot_pb2_grpc
from arena.wire.serde import (
    PROTOCOL_VERSION,
    WireError,
    action_to_response,
    game_result_from_request,
    hello_response,
    round_result_from_request,
    view_from_request,
)

__all__ = ["Bot", "GameResult", "RoundResult", "View", "serve"]

log = logging.getLogger("arena.sdk")

MAX_MESSAGE_BYTES = 1024 * 1024
_call = threading.local()


class Bot:
    """A bot. Override :meth:`bid` and :meth:`play`; the rest is optional.

    Every request carries the seat's complete view, so a bot may keep no state at all.
    One that does should key it by ``(self.game_id, view.seat)`` (the game of the call
    being answered, and the seat: one game may seat the bot twice): a bot may play
    several games at once (one call at a time by default; with
    ``serve(workers=N)`` or ``--workers N`` its methods run concurrently on N threads).
    """

    name: ClassVar[str] = "python-bot"
    version: ClassVar[str] = "0.1"
    author: ClassVar[str] = ""
    games: ClassVar[Sequence[str]] = ("wizard", "trumps")

    @property
    def game_id(self) -> str:
        """The id of the game the current call is about (the referee's, unique per run)."""
        return str(getattr(_call, "game_id", ""))

    @property
    def table_id(self) -> str:
        """The id of the table the current call is about."""
        return str(getattr(_call, "table_id", ""))

    @property
    def deadline_ms(self) -> int:
        """The current decision's deadline, ms, as the referee sent it (0: not given)."""
        return int(getattr(_call, "deadline_ms", 0))

    @property
    def bank_ms(self) -> int:
        """The time bank left when the current decision was asked, ms (part of
        :attr:`deadline_ms`: ``deadline_ms - bank_ms`` is the move's own time)."""
        return int(getattr(_call, "bank_ms", 0))

    def bid(self, view: View) -> int:
        """How many tricks to bid (Wizard) or announce (Trumps): one of ``view.legal``."""
        raise NotImplementedError

    def play(self, view: View) -> Card:
        """The card to play: one of ``view.legal``."""
        raise NotImplementedError

    def choose_trump(self, view: View) -> Suit:
        """Wizard, dealer, a Wizard turned: the trump suit. Default: the suit held most
        (ties: the first in C, D, H, S order), as the referee's default action."""
        return most_held_suit(view.hand, view.legal)

    def round_ended(self, result: RoundResult) -> None:
        """Every seat's bids, tricks and points, and the round's tricks (optional)."""

    def game_ended(self, result: GameResult) -> None:
        """Totals and places (optional)."""


class _Servicer(bot_pb2_grpc.BotServiceServicer):
    def __init__(self, bot: Bot) -> None:
        self.bot = bot

    def Hello(self, request: bot_pb2.HelloRequest, context: Any) -> bot_pb2.HelloResponse:
        bot = self.bot
        log.info("hello from referee %s (protocol %d)", request.referee_version,
                 request.protocol_version)
        # a bot that does not override round_ended has no use for the notification
        skip = type(bot).round_ended is Bot.round_ended
        return hello_response(BotInfo(bot.name, bot.version, bot.author,
                                      min(PROTOCOL_VERSION, request.protocol_version or 1),
                                      tuple(bot.games), skip))

    def _decide(self, request: Any, context: Any, decision: Decision) -> Any:
        _call.game_id, _call.table_id = request.game_id, request.table_id
        _call.deadline_ms, _call.bank_ms = request.deadline_ms, request.bank_ms
        try:
            view = view_from_request(request)
        except WireError as e:
            context.abort(grpc.StatusCode.INVALID_ARGUMENT, f"bad request: {e}")
        if decision is Decision.BID:
            action = self.bot.bid(view)
        elif decision is Decision.PLAY:
            action = self.bot.play(view)
        else:
            action = self.bot.choose_trump(view)
        return action_to_response(decision, action)

    def Bid(self, request: bot_pb2.BidRequest, context: Any) -> bot_pb2.BidResponse:
        return self._decide(request, context, Decision.BID)  # type: ignore[no-any-return]

    def ChooseTrump(self, request: bot_pb2.ChooseTrumpRequest,
                    context: Any) -> bot_pb2.ChooseTrumpResponse:
        return self._decide(request, context, Decision.TRUMP)  # type: ignore[no-any-return]

    def Play(self, request: bot_pb2.PlayRequest, context: Any) -> bot_pb2.PlayResponse:
        return self._decide(request, context, Decision.PLAY)  # type: ignore[no-any-return]

    def RoundEnded(self, request: bot_pb2.RoundEndedRequest,
                   context: Any) -> bot_pb2.RoundEndedResponse:
        _call.game_id, _call.table_id = request.game_id, request.table_id
        self.bot.round_ended(round_result_from_request(request))
        return bot_pb2.RoundEndedResponse()

    def GameEnded(self, request: bot_pb2.GameEndedRequest,
                  context: Any) -> bot_pb2.GameEndedResponse:
        _call.game_id, _call.table_id = request.game_id, request.table_id
        self.bot.game_ended(game_result_from_request(request))
        return bot_pb2.GameEndedResponse()


class _TokenCheck(grpc.ServerInterceptor):
    """Answers UNAUTHENTICATED to a call without ``authorization: Bearer <token>``; the
    health service stays open (it tells nothing about the bot but that it serves)."""

    def __init__(self, token: str) -> None:
        self._expected = f"Bearer {token}".encode()

    def intercept_service(self, continuation: Callable[[Any], Any], details: Any) -> Any:
        if details.method.startswith(f"/{health.SERVICE_NAME}/"):
            return continuation(details)
        given = dict(details.invocation_metadata or ()).get("authorization", "")
        if hmac.compare_digest(str(given).encode(), self._expected):
            return continuation(details)
        handler = continuation(details)
        if handler is None:
            return None
        log.warning("refused a call to %s: %s bearer token", details.method,
                    "wrong" if given else "no")

        def deny(_request: Any, context: grpc.ServicerContext) -> Any:
            context.abort(grpc.StatusCode.UNAUTHENTICATED, "missing or wrong bearer token")

        make = {(False, False): grpc.unary_unary_rpc_method_handler,
                (False, True): grpc.unary_stream_rpc_method_handler,
                (True, False): grpc.stream_unary_rpc_method_handler,
                (True, True): grpc.stream_stream_rpc_method_handler}
        return make[handler.request_streaming, handler.response_streaming](deny)


def _read(path: str, what: str, prog: str) -> bytes:
    try:
        with open(path, "rb") as f:
            return f.read()
    except OSError as e:
        print(f"{prog}: cannot read the TLS {what} {path}: {e.strerror}", file=sys.stderr)
        sys.exit(2)


_STOP_SIGNALS = (signal.SIGTERM, signal.SIGINT)


def serve(bot: Bot, argv: Sequence[str] | None = None, workers: int = 1) -> None:
    """Serve ``bot`` until SIGTERM or SIGINT; the listen address comes from ``--listen``
    or ``ARENA_BOT_LISTEN`` (``unix:PATH`` or ``HOST:PORT``; port 0 picks a free one).
    """
    parser = argparse.ArgumentParser(prog=bot.name, description=f"trick-arena bot {bot.name}")
    parser.add_argument("--listen", default=os.environ.get("ARENA_BOT_LISTEN"),
                        help="unix:PATH or HOST:PORT (default: $ARENA_BOT_LISTEN)")
    parser.add_argument("--tls-cert", default=os.environ.get("ARENA_BOT_TLS_CERT"),
                        metavar="PEM", help="serve TLS with this certificate (chain) "
                        "(default: $ARENA_BOT_TLS_CERT)")
    parser.add_argument("--tls-key", default=os.environ.get("ARENA_BOT_TLS_KEY"),
                        metavar="PEM", help="the certificate's private key "
                        "(default: $ARENA_BOT_TLS_KEY)")
    parser.add_argument("--token", default=os.environ.get("ARENA_BOT_TOKEN"),
                        help="refuse calls without 'authorization: Bearer TOKEN' "
                        "(default: $ARENA_BOT_TOKEN; prefer the variable: a command line "
                        "is visible to other users)")
    parser.add_argument("--log-level", default="INFO")
    parser.add_argument("--workers", type=int, default=workers,
                        help=f"threads answering calls (default {workers})")
    args = parser.parse_args(argv)
    logging.basicConfig(stream=sys.stderr, level=args.log_level.upper(),
                        format=f"%(asctime)s {bot.name} %(levelname)s %(message)s")
    if not args.listen:
        print(f"{bot.name}: no listen address: set ARENA_BOT_LISTEN or pass --listen",
              file=sys.stderr)
        sys.exit(2)
    if bool(args.tls_cert) != bool(args.tls_key):
        print(f"{bot.name}: TLS needs both --tls-cert and --tls-key "
              f"(or ARENA_BOT_TLS_CERT and ARENA_BOT_TLS_KEY)", file=sys.stderr)
        sys.exit(2)
    credentials = None
    if args.tls_cert:
        credentials = grpc.ssl_server_credentials(
            [(_read(args.tls_key, "key", bot.name), _read(args.tls_cert, "certificate",
                                                          bot.name))])
    server = grpc.server(
        futures.ThreadPoolExecutor(max_workers=max(1, args.workers)),
        interceptors=[_TokenCheck(args.token)] if args.token else None,
        options=[("grpc.max_receive_message_length", MAX_MESSAGE_BYTES),
                 ("grpc.max_send_message_length", MAX_MESSAGE_BYTES)])
    bot_pb2_grpc.add_BotServiceServicer_to_server(_Servicer(bot), server)
    health_servicer = health.HealthServicer()
    health_pb2_grpc.add_HealthServicer_to_server(health_servicer, server)
    service_names = (bot_pb2.DESCRIPTOR.services_by_name["BotService"].full_name,
                     health.SERVICE_NAME, reflection.SERVICE_NAME)
    reflection.enable_server_reflection(service_names, server)
    try:
        port = (server.add_secure_port(args.listen, credentials) if credentials is not None
                else server.add_insecure_port(args.listen))
    except RuntimeError as e:
        print(f"{bot.name}: cannot listen on {args.listen}: {e}", file=sys.stderr)
        sys.exit(2)
    server.start()
    for service in ("", service_names[0]):
        health_servicer.set(service, health_pb2.HealthCheckResponse.SERVING)
    where = args.listen if args.listen.startswith("unix:") else f"port {port}"
    guards = [g for g, on in (("TLS", credentials is not None),
                              ("token required", bool(args.token))) if on]
    log.info("serving%s on %s", f" ({', '.join(guards)})" if guards else "", where)

    stop = threading.Event()
    for sig in _STOP_SIGNALS:
        signal.signal(sig, lambda *_: stop.set())
    _watch_parent(stop)
    # Python runs a signal's handler in the main thread, and only when that thread runs
    # Python code: a signal the kernel hands to one of gRPC's threads would wait until
    # the main thread wakes. So it wakes often, and the bot stops at once when asked.
    while not stop.wait(0.1):
        pass
    log.info("stopping")
    _exit_by(STOP_DEADLINE_S)
    health_servicer.enter_graceful_shutdown()
    server.stop(grace=0.5).wait()


STOP_DEADLINE_S = 1.5
"""Once asked to stop, the bot's process is gone within this many seconds, whatever
still runs in it: the arena ends a bot with SIGKILL 1 s after SIGTERM in a game, and
``arena check-bot`` fails a bot still running 3 s after it. A call's handler still
thinking (the server's stop cancels the call, but cannot stop its thread, and the
interpreter's exit waits for the threads that answer calls), a thread of the bot's own
that is not a daemon, or gRPC's own shutdown would otherwise hold the exit up."""


def _exit_by(deadline_s: float) -> None:
    """End the process ``deadline_s`` from now unless it has ended by then (standard
    output and error flushed; status 0: it was asked to stop)."""

    def hard_exit() -> None:
        time.sleep(deadline_s)
        for stream in (sys.stdout, sys.stderr):
            with contextlib.suppress(Exception):
                stream.flush()
        os._exit(0)

    threading.Thread(target=hard_exit, name="stop-deadline", daemon=True).start()


def _watch_parent(stop: threading.Event) -> None:
    """Stop when the process that started this bot is gone, even after its kill -9.

    An orphan is re-parented (to init or a subreaper), so a changed parent pid means the
    arena or the sandbox around this bot has ended. This works inside a PID namespace
    too, where the arena's own pid is not visible.
    """
    parent = os.getppid()
    if parent <= 1:  # already an orphan, or pid 1's child in a container: nothing to watch
        return

    def watch() -> None:
        while not stop.wait(0.25):
            if os.getppid() != parent:
                log.info("the process that started this bot (pid %d) is gone", parent)
                stop.set()

    threading.Thread(target=watch, name="parent-watch", daemon=True).start()
