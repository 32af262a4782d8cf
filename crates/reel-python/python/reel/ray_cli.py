"""``python -m reel.ray_cli convert SRC DST --to FORMAT``: what ``reel convert --ray`` runs.

Connects to Ray (``--address``, else what ``ray.init()`` finds: ``RAY_ADDRESS`` or a running
local cluster, else a new local one), runs ``reel.ray.convert`` and prints its report like
``reel convert`` (``--json`` for JSON). Exit status: 0 done, 2 refused or failed.
"""

from __future__ import annotations

import argparse
import json
import logging
import sys

import reel


def _without_ray_advice(message: str) -> str:
    """Ray Data appends retry advice to a task's exception message; reel's message is the
    part before it."""
    kept = []
    for line in message.splitlines():
        if line.startswith(("Failed to apply UDF", "To change retry attempts")):
            break
        kept.append(line)
    return "\n".join(kept).strip()


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m reel.ray_cli")
    commands = parser.add_subparsers(dest="command", required=True)
    c = commands.add_parser("convert", help="convert a dataset on Ray")
    c.add_argument("src")
    c.add_argument("dst")
    c.add_argument("--to", required=True)
    c.add_argument("--address", default=None, help="the Ray cluster (default: what ray.init finds)")
    c.add_argument("--parts", type=int, default=None)
    c.add_argument("--overwrite", action="store_true")
    c.add_argument("--no-verify", action="store_true")
    c.add_argument("--json", action="store_true")
    args = parser.parse_args(argv)

    import ray

    import reel.ray as reel_ray

    ray.init(address=args.address, log_to_driver=False, logging_level=logging.WARNING)
    try:
        report = reel_ray.convert(
            args.src,
            args.dst,
            to=args.to,
            parts=args.parts,
            verify=not args.no_verify,
            overwrite=args.overwrite,
        )
    except (reel.ReelError, OSError, ValueError) as e:
        print(f"reel: error: {_without_ray_advice(str(e))}", file=sys.stderr)
        return 2
    finally:
        ray.shutdown()
    if args.json:
        report["losses"] = [{"field": f, "what": w} for f, w in report["losses"]]
        print(json.dumps(report))
    else:
        for field, what in report["losses"]:
            print(f"lost: {field}: {what}")
        print(
            f"converted {report['records']} records from {report['from']} to {report['to']} "
            f"({report['bytes']} bytes) in {report['parts']} Ray tasks: {report['outputs'][0]}"
        )
    return 0


if __name__ == "__main__":
    sys.exit(main())
