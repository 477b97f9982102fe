"""The raw client of the bench's headline: a whole process that sends request bodies with `AsyncOpenAI`.

    python bench/raw_client.py --url URL --bodies bodies.jsonl [--concurrency 32] [--transport httpx|aiohttp]

One `chat.completions.create` per body, at most `--concurrency` in flight (a semaphore), as a user writes
it. The bodies are the harness's own requests, captured by the server from a `vbench run` on the same
cases (one JSON object per line), so the raw process pays for no rendering and gets no easier request.
Keys `create` does not name go in `extra_body`, as the harness sends them. Prints one JSON line
(requests, failures); exits 1 when any request failed. It imports nothing of the project: started as a
script, it pays only for what a user's script would.
"""

from __future__ import annotations

import argparse
import asyncio
import inspect
import json
import sys
from typing import Any

import openai


def split_body(body: dict[str, Any], named: frozenset[str]) -> tuple[dict[str, Any], dict[str, Any]]:
    """`create`'s own keyword arguments, and the rest (for `extra_body`)."""
    return {k: v for k, v in body.items() if k in named}, {k: v for k, v in body.items() if k not in named}


async def send_all(bodies: list[dict[str, Any]], url: str, concurrency: int, transport: str) -> int:
    """Send every body, `concurrency` at a time; the number that failed or came back without content."""
    http = openai.DefaultAioHttpClient() if transport == "aiohttp" else None  # None: the client's own (httpx)
    client = openai.AsyncOpenAI(base_url=url, api_key="no-key", max_retries=0, timeout=120.0, http_client=http)
    named = frozenset(inspect.signature(client.chat.completions.create).parameters)
    gate = asyncio.Semaphore(concurrency)
    failures = 0

    async def send(body: dict[str, Any]) -> None:
        nonlocal failures
        kwargs, extra = split_body(body, named)
        async with gate:
            try:
                completion = await client.chat.completions.create(**kwargs, extra_body=extra or None)
                failures += not completion.choices[0].message.content
            except openai.OpenAIError:
                failures += 1

    await asyncio.gather(*(send(body) for body in bodies))
    await client.close()
    return failures


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("--url", required=True)
    parser.add_argument("--bodies", required=True)
    parser.add_argument("--concurrency", type=int, default=32)
    parser.add_argument("--transport", choices=("httpx", "aiohttp"), default="httpx")
    args = parser.parse_args(argv)
    with open(args.bodies, encoding="utf-8") as fh:
        bodies = [json.loads(line) for line in fh if line.strip()]
    failures = asyncio.run(send_all(bodies, args.url, args.concurrency, args.transport))
    print(json.dumps({"requests": len(bodies), "failures": failures}), flush=True)
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
