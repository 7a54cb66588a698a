#!/usr/bin/env python3
"""Aggregate decode tokens/s against the number of sequences decoded together, as an SVG.

    bench/plot_batched.py RESULTS.csv OUT.svg [TITLE]

RESULTS.csv: lines "system,format,sequences,tokens_per_second" (bench/compare_llama_cpp.sh
writes it with BATCH=...). One line per (system, format): tessera (any label starting so) solid, the others dashed, one
colour per format. Plain SVG written by hand: no plotting package needed.
"""
import csv
import sys
from collections import defaultdict

W, H = 720, 440
LEFT, RIGHT, TOP, BOTTOM = 70, 170, 40, 50
COLOURS = {"f32": "#1f77b4", "bf16": "#2ca02c", "q8_0": "#d62728", "q4_0": "#9467bd"}


def main(argv):
    if len(argv) < 3:
        print(__doc__.strip(), file=sys.stderr)
        return 2
    series = defaultdict(list)
    with open(argv[1], newline="") as f:
        for system, fmt, n, rate in csv.reader(f):
            series[(system, fmt)].append((int(n), float(rate)))
    if not series:
        print("plot_batched: no data in " + argv[1], file=sys.stderr)
        return 1
    title = argv[3] if len(argv) > 3 else "Aggregate decode throughput"
    xs = sorted({n for points in series.values() for n, _ in points})
    top = max(r for points in series.values() for _, r in points) * 1.08
    plot_w, plot_h = W - LEFT - RIGHT, H - TOP - BOTTOM

    def x_of(n):  # evenly spaced categories (1, 2, 4, 8, 16 read as doublings)
        return LEFT + plot_w * (xs.index(n) / max(1, len(xs) - 1))

    def y_of(r):
        return TOP + plot_h * (1 - r / top)

    out = [f'<svg xmlns="http://www.w3.org/2000/svg" width="{W}" height="{H}" font-family="sans-serif" font-size="12">',
           f'<rect width="{W}" height="{H}" fill="white"/>',
           f'<text x="{W / 2}" y="22" text-anchor="middle" font-size="15">{title}</text>']
    step = 10 ** max(0, len(str(int(top))) - 1)
    while top / step < 4:
        step /= 2
    r = 0.0
    while r <= top:
        y = y_of(r)
        out.append(f'<line x1="{LEFT}" y1="{y:.1f}" x2="{LEFT + plot_w}" y2="{y:.1f}" stroke="#ddd"/>')
        out.append(f'<text x="{LEFT - 6}" y="{y + 4:.1f}" text-anchor="end">{r:g}</text>')
        r += step
    for n in xs:
        out.append(f'<text x="{x_of(n):.1f}" y="{TOP + plot_h + 18}" text-anchor="middle">{n}</text>')
    out.append(f'<text x="{LEFT + plot_w / 2}" y="{H - 10}" text-anchor="middle">sequences decoded together</text>')
    out.append(f'<text x="16" y="{TOP + plot_h / 2}" text-anchor="middle" transform="rotate(-90 16 {TOP + plot_h / 2})">'
               'tokens/s (all sequences)</text>')
    out.append(f'<rect x="{LEFT}" y="{TOP}" width="{plot_w}" height="{plot_h}" fill="none" stroke="#444"/>')
    legend_y = TOP + 10
    for (system, fmt), points in sorted(series.items()):
        points.sort()
        colour = COLOURS.get(fmt, "#444")
        dash = "" if system.startswith("tessera") else ' stroke-dasharray="6 4"'
        path = " ".join(f"{x_of(n):.1f},{y_of(r):.1f}" for n, r in points)
        out.append(f'<polyline points="{path}" fill="none" stroke="{colour}" stroke-width="2"{dash}/>')
        for n, r in points:
            out.append(f'<circle cx="{x_of(n):.1f}" cy="{y_of(r):.1f}" r="3" fill="{colour}"/>')
        lx = LEFT + plot_w + 14
        out.append(f'<line x1="{lx}" y1="{legend_y}" x2="{lx + 26}" y2="{legend_y}" stroke="{colour}" stroke-width="2"{dash}/>')
        out.append(f'<text x="{lx + 32}" y="{legend_y + 4}">{system} {fmt}</text>')
        legend_y += 18
    out.append("</svg>")
    with open(argv[2], "w") as f:
        f.write("\n".join(out) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
