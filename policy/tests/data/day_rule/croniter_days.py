"""Prints, for each line on stdin (an expression, optionally followed by a tab and more), the days in Nov-Dec 2026 on which croniter fires
at least once, as a '#'/'.' strip (or 'ERR <message>'). Part of generate.sh."""
import sys
from datetime import datetime, timedelta

from croniter import croniter

START, END = datetime(2026, 11, 1), datetime(2027, 1, 1)

for line in sys.stdin:
    expr = line.split("\t")[0].strip()
    if not expr:
        continue
    try:
        it = croniter(expr, START - timedelta(seconds=1))
    except Exception as e:  # croniter raises several types for bad input
        print(f"ERR {str(e).splitlines()[0]}")
        continue
    days = set()
    while (t := it.get_next(datetime)) < END:
        days.add((t - START).days)
    print("".join("#" if d in days else "." for d in range(61)))
