"""Decodes HdrHistogram interval logs with Python's hdrhistogram package (an
implementation independent of the one that wrote them) and prints, per file,
the total count and the values at the asked percentiles of each histogram,
as JSON: {file: [{"start": s, "end": e, "total": n, "max": v, "percentiles": {"50": v, ...}}, ...]}.

usage: python3 hdr_decode.py PERCENTILES FILE...   (PERCENTILES: 50,90,99)
"""
import json
import sys

from hdrh.histogram import HdrHistogram
from hdrh.log import HistogramLogReader


def main():
    percentiles = [float(p) for p in sys.argv[1].split(",")]
    out = {}
    for name in sys.argv[2:]:
        reader = HistogramLogReader(name, HdrHistogram(1, 2**40, 3))
        lines = []
        while True:
            h = reader.get_next_interval_histogram()
            if h is None:
                break
            lines.append({
                "start": h.get_start_time_stamp(),
                "end": h.get_end_time_stamp(),
                "total": h.get_total_count(),
                "max": h.get_max_value(),
                "percentiles": {("%g" % p): h.get_value_at_percentile(p) for p in percentiles},
            })
        out[name] = lines
    json.dump(out, sys.stdout)


if __name__ == "__main__":
    main()
