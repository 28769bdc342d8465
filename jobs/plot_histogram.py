#!/usr/bin/python3
"""Draws the histogram that tessera-histogram wrote (--output FILE.h5:/DATASET) as a PNG: the counts
(DATASET, int64) over their bin edges (DATASET_edges, float64), one step per bin, with the samples
below, above and NaN (the counts' attributes) in the title.

usage: plot_histogram.py FILE.h5:/DATASET [--png FILE] [--log] [--title TEXT]
  --png    the image (default: DATASET's name with .png, beside FILE.h5)
  --log    a logarithmic count axis
  --title  the plot's title (default: the dataset and the app's attributes)

Needs h5py, numpy and matplotlib (Agg backend: no display); run with the Python that has them
(/usr/bin/python3 on the project's machines). Exit status 2, with one line, on a bad argument or a
file that does not hold such a histogram.
"""
import argparse
import os
import sys


def fail(message):
    print(f"plot_histogram: {message}", file=sys.stderr)
    sys.exit(2)


def text(v):
    return v.decode() if isinstance(v, bytes) else str(v)


def main():
    p = argparse.ArgumentParser(description="Draw a tessera-histogram output as a PNG.")
    p.add_argument("dataset", help="FILE.h5:/DATASET, as given to tessera-histogram --output")
    p.add_argument("--png", help="output image (default: beside the file, named after the dataset)")
    p.add_argument("--log", action="store_true", help="logarithmic count axis")
    p.add_argument("--title", help="plot title")
    a = p.parse_args()
    file, sep, dataset = a.dataset.rpartition(":/")
    if not sep or not file or not dataset:
        fail(f"'{a.dataset}' is not FILE.h5:/DATASET")
    dataset = "/" + dataset
    try:
        import h5py
        import numpy as np
        import matplotlib
        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError as e:
        fail(f"needs h5py, numpy and matplotlib ({e})")
    if not os.path.exists(file):
        fail(f"no such file '{file}'")
    try:
        with h5py.File(file, "r") as f:
            if dataset not in f or dataset + "_edges" not in f:
                fail(f"'{file}' has no histogram at {dataset} (counts) and {dataset}_edges (edges)")
            counts = f[dataset][...]
            edges = f[dataset + "_edges"][...]
            attrs = {k: text(v) for k, v in f[dataset].attrs.items()}
    except OSError as e:
        fail(f"cannot read '{file}': {e}")
    if counts.ndim != 1 or edges.ndim != 1 or edges.size != counts.size + 1:
        fail(f"{dataset} holds {counts.shape} counts and {dataset}_edges {edges.shape} edges; expected N and N + 1")
    png = a.png or os.path.join(os.path.dirname(os.path.abspath(file)), dataset.strip("/").replace("/", "_") + ".png")

    fig, ax = plt.subplots(figsize=(8, 4.5), dpi=120)
    finite = np.isfinite(edges)
    shown = edges.copy()
    # Infinite outer edges: drawn one neighbouring bin's width beyond the finite ones.
    if not finite[0] and edges.size > 2:
        shown[0] = shown[1] - (shown[2] - shown[1] if np.isfinite(shown[2]) else 1.0)
    if not finite[-1] and edges.size > 2:
        shown[-1] = shown[-2] + (shown[-2] - shown[-3] if np.isfinite(shown[-3]) else 1.0)
    ax.stairs(counts, shown, fill=True, alpha=0.8)
    if a.log:
        ax.set_yscale("log")
    ax.set_xlabel("sample value")
    ax.set_ylabel("samples per bin")
    outside = ", ".join(f"{attrs[k]} {k}" for k in ("below", "above", "nan") if k in attrs)
    title = a.title or f"{os.path.basename(file)}:{dataset}, {counts.size} bins, {int(counts.sum())} samples in bins"
    ax.set_title(title + (f"\n({outside})" if outside else ""), fontsize=10)
    fig.tight_layout()
    fig.savefig(png)
    print(png)


if __name__ == "__main__":
    main()
