"""Many threads at once through the real app's HTTP endpoint (`slack-agent run` in its own
process), against the fake Slack and the fake LLM with injected latency, in a process of
their own (benchmarks/fake_services.py), on a real Redis (REDIS_URL, default
127.0.0.1:6379). This process only sends the events and times the acks.

Each turn: the model asks for one slow tool, then answers. Prints:
- ack latency (signed POST /slack/events until Slack would have its 200), p50 and p99;
- time to first visible feedback (the first Slack call for the thread: status or message);
- end-to-end time (the event sent until the call that completes the answer in Slack)
  divided by the critical path: 2 LLM calls + the tool;
- Slack Web API calls per turn, by method;
- the app's CPU per turn: user + system time, read from /proc, of the `slack-agent run`
  process and every process below it, sampled before and after the measured batch (the
  batch includes the last 1.5 s of background edits); and its idle CPU, measured over the
  1.5 s before the batch, for comparison; and each process's resident memory after it;
- the CPU per turn of this process (the client: its delays show in the acks) and of the
  fakes' process (their delays show in feedback and end-to-end).

Answers are streamed (slack.streaming and llm.stream on) unless --no-streaming. By default
it runs once with 1 thread and once with 50. --profile FILE attaches py-spy to the app for
the measured batch (run with `uv run --with py-spy ...`); CPU figures are then less exact.

``--workers N`` is passed to `slack-agent run --workers N` (otherwise not passed: the app's
default, a worker process per CPU beside the ingress; 0: the worker loop in the ingress's
process); the measuring starts once every worker process has logged that it started (the
app's stderr is relayed). ``--burst N`` posts N mentions at once, each on a new connection
(as Slack sends them), instead of --threads; it prints the acks' maximum and the ingress's
CPU per ack (its own process, from the first POST to the last ack) too. Every body is made
and signed before the clock starts: an ack is timed from its POST to the 200.
``--raw-client`` (with --burst) sends each request as bytes made before the clock starts,
over a bare asyncio connection, instead of through aiohttp's client: the client then costs
about half the CPU on the machine's shared cores (Slack's own senders are not on them).

``--count-redis`` counts the app's Redis round trips (a command, or a pipeline) over the
measured batch, in every process of the app, and prints them per turn by command, a script
named by the file and line that registered it (benchmarks/redis_sends/).

``--sentinel`` runs the app behind Sentinels, on a private primary with one replica and a
Sentinel (tests/fakes/redis_sentinel.py), with its default there: every write it builds on
confirmed by the replica (WAIT, docs/deploy.md); ``--replica-acks N`` sets
``redis.replica_acks`` (0: no WAIT), to measure what the confirmations cost.

``--plot DIR`` draws the runs (use several --threads) with matplotlib into DIR:
ack_and_end_to_end.png (ack p99, end-to-end ÷ critical path p50 and p99, against the
concurrency) and cpu_per_turn.png (the app's and the fakes' CPU per turn against the
concurrency).

Run: uv run python -m benchmarks.slack_turns [--threads 1 50] [--llm-ms 200] [--tool-ms 300]
     [--no-streaming] [--profile FILE] [--workers N] [--plot DIR] [--count-redis]
     uv run python -m benchmarks.slack_turns --burst 200 --workers 0   (or 1, 2)
     uv run python -m benchmarks.slack_turns --burst 200 --raw-client
     uv run python -m benchmarks.slack_turns --burst 200 --sentinel [--replica-acks 0]
     uv run python -m benchmarks.slack_turns --threads 1 20 50 200 500 --plot docs/benchmarks
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import gc
import json
import os
import signal
import statistics
import sys
import tempfile
import time
import uuid
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import aiohttp
import yaml

from benchmarks import redis_sends
from benchmarks.fake_services import MENTIONER, FakeServices
from benchmarks.process_cpu import own_cpu_seconds, tree_cpu_seconds, tree_rss_bytes, tree_size
from benchmarks.redis_prefix import delete_prefix
from bot.process.worker_count import cpu_count
from tests.fakes.redis_sentinel import PrivateSentinel
from tests.fakes.redis_server import free_port
from tests.fakes.slack_harness import app_environment, event_envelope, mention, signed_headers

REDIS_URL = os.environ.get("REDIS_URL", "redis://127.0.0.1:6379/0")


def percentile(samples: list[float], fraction: float) -> float:
    ordered = sorted(samples)
    return ordered[min(len(ordered) - 1, round(fraction * (len(ordered) - 1)))]


@dataclass(frozen=True)
class SignedEvent:
    """A mention's body and Slack's signature headers, made before the clock starts (as
    Slack's own senders have them ready): the ack time is the app's, not the signing's."""

    body: str
    headers: dict[str, str]

    @classmethod
    def mention(cls, channel: str, ts: str) -> SignedEvent:
        event = mention("stock?", ts, channel=channel, user=MENTIONER)
        body = json.dumps(event_envelope(event, f"Ev{channel}{ts}"))
        return cls(body, signed_headers(body))

    def request(self, port: int) -> bytes:
        """The whole HTTP/1.1 request, on a connection of its own (``Connection: close``)."""
        body = self.body.encode()
        head = [
            "POST /slack/events HTTP/1.1",
            f"Host: 127.0.0.1:{port}",
            f"Content-Length: {len(body)}",
            "Connection: close",
            *(f"{name}: {value}" for name, value in self.headers.items()),
        ]
        return ("\r\n".join(head) + "\r\n\r\n").encode() + body


@contextlib.contextmanager
def collector_held() -> Iterator[None]:
    """This process's garbage collector held off while acks are timed. A full collection
    of the client's heap takes tens of milliseconds, and it would count as the server's
    ack time: whether one fell inside a burst depended on how many modules the client had
    loaded, not on the server."""
    gc.collect()
    gc.disable()
    try:
        yield
    finally:
        gc.enable()


async def post_event(session: aiohttp.ClientSession, port: int, channel: str, ts: str) -> float:
    return await post_signed(session, port, SignedEvent.mention(channel, ts))


async def post_signed(session: aiohttp.ClientSession, port: int, signed: SignedEvent) -> float:
    """POST ``signed``; the milliseconds until the app's 200."""
    started = time.monotonic()
    async with session.post(
        f"http://127.0.0.1:{port}/slack/events", data=signed.body, headers=signed.headers
    ) as response:
        await response.read()
        assert response.status == 200, response.status
    return (time.monotonic() - started) * 1000


async def post_raw(port: int, request: bytes) -> float:
    """Send ``request`` (:meth:`SignedEvent.request`) on a new connection; the milliseconds
    until the app's 200 has been read (the lean client of --raw-client)."""
    started = time.monotonic()
    reader, writer = await asyncio.open_connection("127.0.0.1", port)
    try:
        writer.write(request)
        status = await reader.readline()
        assert status.split(b" ", 2)[1:2] == [b"200"], status
        await reader.read()  # to the end: the server closes the connection
    finally:
        writer.close()
    return (time.monotonic() - started) * 1000


async def wait_healthy(session: aiohttp.ClientSession, port: int) -> None:
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        try:
            async with session.get(f"http://127.0.0.1:{port}/healthz") as response:
                if response.status == 200:
                    return
        except aiohttp.ClientError:
            pass
        await asyncio.sleep(0.1)
    raise RuntimeError("the app did not start")


@dataclass(frozen=True)
class Options:
    llm_ms: int = 200
    tool_ms: int = 300
    streaming: bool = True
    profile: str | None = None
    workers: int | None = None  # passed to `slack-agent run --workers`; None: its default
    burst: bool = False  # every mention on a new connection
    raw_client: bool = False  # each request as bytes on a bare asyncio connection
    count_redis: bool = False  # the app's Redis round trips per turn, by command
    sentinel: bool = False  # behind Sentinels: a private primary, its replica, a Sentinel
    replica_acks: int | None = None  # redis.replica_acks; None: the app's default


@dataclass(frozen=True)
class Figures:
    """One run's figures (times in ms; ratios to the critical path)."""

    threads: int
    workers: int | None
    burst: bool
    streaming: bool
    ack_p50_ms: float
    ack_p99_ms: float
    ack_max_ms: float
    feedback_p50_ms: float
    feedback_p99_ms: float
    ratio_p50: float
    ratio_p99: float
    slack_calls_per_turn: float
    app_cpu_ms_per_turn: float
    app_cpu_share: float  # of one core, over the batch
    app_processes: int
    app_rss_mib: list[float]  # each process's resident memory after the batch
    client_cpu_ms_per_turn: float  # this process: it sends the events and times the acks
    ingress_cpu_ms_per_ack: float  # the app's top process, from the first POST to the last ack
    fakes_cpu_ms_per_turn: float  # the fakes' process (benchmarks/fake_services.py)


class Output:
    """The app's stderr, passed through; counts the worker processes that have started
    (each logs "slack-agent worker started" at WARNING)."""

    def __init__(self, stream: asyncio.StreamReader) -> None:
        self.workers_started = 0
        self.task = asyncio.create_task(self._relay(stream))

    async def _relay(self, stream: asyncio.StreamReader) -> None:
        while line := await stream.readline():
            sys.stderr.buffer.write(line)
            sys.stderr.flush()
            if b"slack-agent worker started" in line:
                self.workers_started += 1

    async def workers(self, count: int) -> None:
        deadline = time.monotonic() + 60
        while self.workers_started < count:
            if time.monotonic() > deadline:
                raise RuntimeError(f"{self.workers_started} of {count} worker processes started")
            await asyncio.sleep(0.1)


async def start_profiler(pid: int, output: str) -> asyncio.subprocess.Process:
    """py-spy recording ``pid`` (and its children) into ``output`` until interrupted."""
    fmt = "speedscope" if output.endswith(".json") else "raw" if output.endswith(".txt") else None
    command = ["py-spy", "record", "--rate", "1000", "--gil", "--pid", str(pid), "--subprocesses"]
    command += ["-o", output]
    if fmt:
        command += ["-f", fmt]
    profiler = await asyncio.create_subprocess_exec(*command)
    await asyncio.sleep(1.0)  # py-spy attaches
    return profiler


async def main(threads: int, options: Options) -> Figures:
    llm_ms, tool_ms = options.llm_ms, options.tool_ms

    fakes = await FakeServices.start(llm_ms)
    prefix = f"bench:{uuid.uuid4().hex[:8]}:"
    directory = Path(tempfile.mkdtemp())
    config = directory / "agent.yaml"
    sentinel = PrivateSentinel() if options.sentinel else None
    if sentinel is not None:
        await asyncio.to_thread(sentinel.start)
    redis_url = sentinel.url if sentinel is not None else REDIS_URL
    replica = {} if options.replica_acks is None else {"replica_acks": options.replica_acks}
    config.write_text(
        yaml.safe_dump(
            {
                "redis": {"key_prefix": prefix, **replica},
                "llm": {"model": "fake-model", "max_retries": 0, "stream": options.streaming},
                "queue": {"concurrency": max(threads, 8)},
                "tools": {"modules": ["benchmarks.bench_tools"]},
                "slack": {"streaming": options.streaming},
            }
        )
    )
    sends = directory / "redis-sends"
    sends.mkdir()
    env = app_environment(
        fakes.slack_url,
        fakes.llm_url,
        redis_url,
        config,
        BENCH_TOOL_MS=str(tool_ms),
        LOG_LEVEL="WARNING",
        **(redis_sends.environment(sends) if options.count_redis else {}),
    )
    port = free_port()
    chosen = ["--workers", str(options.workers)] if options.workers is not None else []
    app = await asyncio.create_subprocess_exec(
        sys.executable,
        "-m",
        "bot.cli",
        "run",
        "--port",
        str(port),
        *chosen,
        env=env,
        stderr=asyncio.subprocess.PIPE,
    )
    assert app.stderr is not None
    output = Output(app.stderr)
    # A burst: every mention on a connection of its own, as Slack sends them.
    connector = aiohttp.TCPConnector(limit=0, force_close=options.burst)
    profiler: asyncio.subprocess.Process | None = None
    try:
        async with aiohttp.ClientSession(connector=connector) as session:
            await wait_healthy(session, port)
            await output.workers(options.workers if options.workers is not None else cpu_count())
            await post_event(session, port, "C0WARM", "1.000001")  # auth.test, connections
            while "C0WARM" not in await fakes.answered():
                await asyncio.sleep(0.05)
            idle_from = tree_cpu_seconds(app.pid)
            await asyncio.sleep(1.5)
            idle_cpu_s = tree_cpu_seconds(app.pid) - idle_from
            if options.profile:
                profiler = await start_profiler(app.pid, options.profile)
            await fakes.clear()
            sends_before = await redis_sends.snapshot(sends)
            cpu_before = tree_cpu_seconds(app.pid)
            fakes_before = tree_cpu_seconds(fakes.pid)
            own_before = time.process_time()

            sent: dict[str, float] = {}

            signed = {
                f"C{n:05d}": SignedEvent.mention(f"C{n:05d}", f"{1000 + n}.000001")
                for n in range(threads)
            }

            raw = (
                {channel: event.request(port) for channel, event in signed.items()}
                if options.raw_client
                else {}
            )

            async def one(channel: str) -> float:
                sent[channel] = time.monotonic()
                if channel in raw:
                    return await post_raw(port, raw[channel])
                return await post_signed(session, port, signed[channel])

            with collector_held():
                started = time.monotonic()
                ingress_before = own_cpu_seconds(app.pid)
                acks = list(await asyncio.gather(*(one(channel) for channel in signed)))
            ingress_cpu_s = own_cpu_seconds(app.pid) - ingress_before
            while len((await fakes.answered()) & sent.keys()) < threads:
                assert time.monotonic() - started < 120, "not every thread was answered"
                await asyncio.sleep(0.05)
            await asyncio.sleep(1.5)  # the last progress edits, before counting calls
            batch_s = time.monotonic() - started
            cpu_s = tree_cpu_seconds(app.pid) - cpu_before
            own_cpu_s = time.process_time() - own_before
            fakes_cpu_s = tree_cpu_seconds(fakes.pid) - fakes_before
            slack_calls = await fakes.calls()
            processes = tree_size(app.pid)
            rss_mib = [size / 2**20 for size in tree_rss_bytes(app.pid)]
            sends_during = await redis_sends.snapshot(sends)
            sends_during.subtract(sends_before)
    finally:
        if profiler is not None:
            profiler.send_signal(signal.SIGINT)
            await profiler.wait()
        app.send_signal(signal.SIGTERM)
        await app.wait()
        await output.task
        if sentinel is not None:
            sentinel.close()
        else:
            await delete_prefix(REDIS_URL, prefix)
        await fakes.stop()

    first_seen: dict[str, float] = {}
    done: dict[str, float] = {}
    for call in slack_calls:
        if call.channel in sent:
            first_seen.setdefault(call.channel, call.at)
            if call.completes:
                done[call.channel] = call.at
    feedback = [(first_seen[c] - sent[c]) * 1000 for c in sent]
    ideal = 2 * llm_ms + tool_ms
    ratios = [(done[c] - sent[c]) * 1000 / ideal for c in sent]
    per_turn = len([c for c in slack_calls if c.method != "auth.test"]) / threads

    figures = Figures(
        threads=threads,
        workers=options.workers,
        burst=options.burst,
        streaming=options.streaming,
        ack_p50_ms=statistics.median(acks),
        ack_p99_ms=percentile(acks, 0.99),
        ack_max_ms=max(acks),
        feedback_p50_ms=statistics.median(feedback),
        feedback_p99_ms=percentile(feedback, 0.99),
        ratio_p50=statistics.median(ratios),
        ratio_p99=percentile(ratios, 0.99),
        slack_calls_per_turn=per_turn,
        app_cpu_ms_per_turn=cpu_s * 1000 / threads,
        app_cpu_share=cpu_s / batch_s,
        app_processes=processes,
        app_rss_mib=rss_mib,
        client_cpu_ms_per_turn=own_cpu_s * 1000 / threads,
        ingress_cpu_ms_per_ack=ingress_cpu_s * 1000 / threads,
        fakes_cpu_ms_per_turn=fakes_cpu_s * 1000 / threads,
    )
    print(
        f"{'burst of ' if options.burst else ''}{threads} concurrent threads; "
        f"workers {'default' if options.workers is None else options.workers}; "
        f"LLM {llm_ms} ms a call, tool {tool_ms} ms; "
        f"critical path {ideal} ms (2 rounds); "
        f"{'streamed' if options.streaming else 'not streamed'}"
        f"{'; the raw client' if options.raw_client else ''}"
        f"{'; behind a Sentinel, one replica' if options.sentinel else ''}"
        f"{'' if options.replica_acks is None else f'; replica_acks {options.replica_acks}'}"
    )
    print(f"{'measure':<34} {'p50':>9} {'p99':>9}")
    print(
        f"{'ack latency (ms)':<34} {statistics.median(acks):>9.1f} {percentile(acks, 0.99):>9.1f}"
        f"   max {max(acks):.1f}"
    )
    print(
        f"{'ingress CPU per ack (ms)':<34} {ingress_cpu_s * 1000 / threads:>9.3f}   "
        f"({ingress_cpu_s * 1000:.1f} ms from the first POST to the last ack; with "
        "--workers 0 turn work included)"
    )
    print(
        f"{'first visible feedback (ms)':<34} {statistics.median(feedback):>9.1f} "
        f"{percentile(feedback, 0.99):>9.1f}"
    )
    print(
        f"{'end-to-end / critical path':<34} {statistics.median(ratios):>9.2f} "
        f"{percentile(ratios, 0.99):>9.2f}"
    )
    print(f"{'Slack API calls per turn':<34} {per_turn:>9.1f}")
    counts: dict[str, int] = {}
    for call in slack_calls:
        counts[call.method] = counts.get(call.method, 0) + 1
    print("  " + ", ".join(f"{m} {n / threads:.1f}" for m, n in sorted(counts.items())))
    print(
        f"{'app CPU per turn (ms)':<34} {cpu_s * 1000 / threads:>9.1f}   "
        f"({cpu_s:.2f} s in {batch_s:.1f} s, {100 * cpu_s / batch_s:.0f}% of a core; "
        f"{processes} process{'es' if processes > 1 else ''})"
    )
    print(f"{'app CPU when idle (ms/s)':<34} {idle_cpu_s * 1000 / 1.5:>9.1f}")
    if options.count_redis:
        trips = sum(sends_during.values())
        print(
            f"{'app Redis round trips per turn':<34} {trips / threads:>9.1f}   "
            f"(every process; a pipeline is one; in the {batch_s:.1f} s batch)"
        )
        for names, count in sends_during.most_common():
            if count > 0:
                print(f"  {count / threads:>6.2f}  {names}")
    print(
        f"{'app resident memory (MiB)':<34} {sum(rss_mib):>9.1f}   "
        f"(each process: {', '.join(f'{m:.0f}' for m in rss_mib)})"
    )
    print(
        f"{'the client (this process) (ms)':<34} {own_cpu_s * 1000 / threads:>9.1f}   "
        f"per turn ({100 * own_cpu_s / batch_s:.0f}% of a core: its latency is in the acks)"
    )
    print(
        f"{'the fakes (their process) (ms)':<34} {fakes_cpu_s * 1000 / threads:>9.1f}   "
        f"per turn ({100 * fakes_cpu_s / batch_s:.0f}% of a core: their latency is in the "
        "end-to-end)"
    )
    return figures


def plot(runs: list[Figures], directory: Path) -> list[Path]:
    """Two PNGs into ``directory``: ack p99 and end-to-end ÷ critical path p50/p99, and the
    app's CPU per turn, each against the concurrency (log x). matplotlib is imported here
    only, with the Agg backend (no display)."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    directory.mkdir(parents=True, exist_ok=True)
    runs = sorted(runs, key=lambda f: f.threads)
    x = [f.threads for f in runs]
    mode = "streamed" if all(f.streaming for f in runs) else "not streamed"
    workers = {f.workers for f in runs}
    chosen = "default" if workers == {None} else ", ".join(str(w) for w in workers)
    subtitle = f"{mode}; workers {chosen}"

    figure, (acks, ratios) = plt.subplots(2, 1, figsize=(7, 6.5), sharex=True)
    acks.plot(x, [f.ack_p99_ms for f in runs], "o-", color="tab:red", label="ack p99")
    acks.plot(x, [f.ack_p50_ms for f in runs], "o--", color="tab:orange", label="ack p50")
    acks.axhline(100, color="grey", linestyle=":", label="target p99 100 ms (burst)")
    acks.set_ylabel("ack latency (ms)")
    acks.set_title(f"Acks and end-to-end against concurrency ({subtitle})")
    acks.legend(loc="upper left")
    ratios.plot(x, [f.ratio_p50 for f in runs], "o-", color="tab:blue", label="p50")
    ratios.plot(x, [f.ratio_p99 for f in runs], "o--", color="tab:purple", label="p99")
    ratios.axhline(1.0, color="grey", linestyle=":", label="the critical path")
    ratios.set_ylabel("end-to-end ÷ critical path")
    ratios.set_xlabel("concurrent threads")
    ratios.legend(loc="upper left")
    for axes in (acks, ratios):
        axes.set_xscale("log")
        axes.set_xticks(x, [str(n) for n in x])
        axes.grid(True, which="major", alpha=0.3)
    figure.tight_layout()
    first = directory / "ack_and_end_to_end.png"
    figure.savefig(first, dpi=100)
    plt.close(figure)

    figure, cpu = plt.subplots(figsize=(7, 4))
    cpu.plot(x, [f.app_cpu_ms_per_turn for f in runs], "o-", color="tab:green", label="app")
    cpu.plot(
        x,
        [f.fakes_cpu_ms_per_turn for f in runs],
        "o--",
        color="tab:grey",
        label="the fakes' process (Slack, LLM)",
    )
    cpu.axhline(12, color="grey", linestyle=":", label="target 12 ms (50 threads)")
    cpu.set_xscale("log")
    cpu.set_xticks(x, [str(n) for n in x])
    cpu.set_ylim(bottom=0)
    cpu.set_xlabel("concurrent threads")
    cpu.set_ylabel("CPU per turn (ms)")
    cpu.set_title(f"CPU per one-tool turn, from /proc ({subtitle})")
    cpu.grid(True, alpha=0.3)
    cpu.legend(loc="upper right")
    figure.tight_layout()
    second = directory / "cpu_per_turn.png"
    figure.savefig(second, dpi=100)
    plt.close(figure)
    return [first, second]


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument(
        "--threads", type=int, nargs="+", default=[1, 50], help="concurrent threads, each run"
    )
    parser.add_argument("--llm-ms", type=int, default=200)
    parser.add_argument("--tool-ms", type=int, default=300)
    parser.add_argument(
        "--no-streaming",
        dest="streaming",
        action="store_false",
        help="post and edit the answer (slack.streaming and llm.stream off)",
    )
    parser.add_argument(
        "--count-redis",
        action="store_true",
        help="count the app's Redis round trips per turn, by command, in every process",
    )
    parser.add_argument("--profile", metavar="FILE", help="py-spy record the measured batch")
    parser.add_argument(
        "--workers",
        type=int,
        help="passed to `slack-agent run --workers` (default: not passed, one per CPU)",
    )
    parser.add_argument(
        "--burst",
        type=int,
        metavar="N",
        help="post N mentions at once, each on a new connection (instead of --threads)",
    )
    parser.add_argument(
        "--raw-client",
        action="store_true",
        help="with --burst: send each request as bytes on a bare asyncio connection (a "
        "client that costs about half the CPU of aiohttp's)",
    )
    parser.add_argument(
        "--sentinel",
        action="store_true",
        help="run behind Sentinels: a private primary, one replica and a Sentinel",
    )
    parser.add_argument(
        "--replica-acks", type=int, metavar="N", help="redis.replica_acks (0: no WAIT)"
    )
    parser.add_argument(
        "--plot", metavar="DIR", type=Path, help="draw the runs into DIR (PNGs, matplotlib)"
    )
    args = parser.parse_args()
    if args.workers is not None and args.workers < 0:
        parser.error(f"argument --workers: {args.workers} is below 0")
    if args.burst is not None and args.burst < 1:
        parser.error(f"argument --burst: {args.burst} is below 1")
    if args.raw_client and args.burst is None:
        parser.error("argument --raw-client: only with --burst")
    counts = [args.burst] if args.burst is not None else args.threads
    results: list[Figures] = []
    for count in counts:
        profile = args.profile
        if profile and len(counts) > 1:
            stem, dot, ext = profile.rpartition(".")
            profile = f"{stem}-{count}.{ext}" if dot else f"{profile}-{count}"
        run = Options(
            args.llm_ms,
            args.tool_ms,
            args.streaming,
            profile,
            workers=args.workers,
            burst=args.burst is not None,
            raw_client=args.raw_client,
            count_redis=args.count_redis,
            sentinel=args.sentinel,
            replica_acks=args.replica_acks,
        )
        results.append(asyncio.run(main(count, run)))
        print()
    if args.plot is not None:
        for path in plot(results, args.plot):
            print(f"drew {path}")
