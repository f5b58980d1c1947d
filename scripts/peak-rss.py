#!/usr/bin/env python3
"""peak-rss.py CMD ARGS... — runs a command, then prints its wall time and
the peak resident memory of it and every descendant it waited for
(getrusage RUSAGE_CHILDREN), so a tune's worker processes count too.
Exits with the command's status."""
import resource
import subprocess
import sys
import time

t0 = time.monotonic()
rc = subprocess.call(sys.argv[1:])
wall = time.monotonic() - t0
peak_kib = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss
print(f"peak-rss: {peak_kib / 1024:.0f} MiB, wall {wall:.1f} s, exit {rc}: "
      f"{' '.join(sys.argv[1:])}", file=sys.stderr, flush=True)
sys.exit(rc)
