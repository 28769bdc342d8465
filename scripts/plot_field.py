#!/usr/bin/env python3
"""Draws a 2-D field of an HDF5 dataset (tessera-stencil --output FILE.h5:/DSET) as a PNG: the field
as an image (row 0 at the top, as the rows are numbered), a colour bar, and a title from the
dataset's attributes (op, size, iterations, residual, grid).

  python3 scripts/plot_field.py FILE.h5:/DATASET OUT.png [--title TEXT]

Needs numpy, h5py and matplotlib (Agg backend: no display); /usr/bin/python3 on Debian and Ubuntu."""
import argparse
import os
import shutil
import sys

NEEDED = ("numpy", "h5py", "matplotlib")


def modules_or_another_python():
    """Returns where the modules are importable; else runs this script again under the first other
    Python that has them (/usr/bin/python3 on Debian and Ubuntu, then each python3 on PATH), or
    exits 2 naming what is missing."""
    missing = []
    for name in NEEDED:
        try:
            __import__(name)
        except ImportError:
            missing.append(name)
    if not missing:
        return
    tried = os.environ.get("TESSERA_PLOT_PYTHONS_TRIED", "")
    here = os.path.realpath(sys.executable)
    candidates = ["/usr/bin/python3"] + [os.path.join(d, "python3") for d in os.environ.get("PATH", "").split(os.pathsep) if d]
    for python in candidates:
        real = os.path.realpath(python) if shutil.which(python) else None
        if not real or real == here or real in tried.split(os.pathsep):
            continue
        os.environ["TESSERA_PLOT_PYTHONS_TRIED"] = os.pathsep.join(filter(None, [tried, here]))
        os.execv(python, [python, os.path.abspath(__file__)] + sys.argv[1:])
    sys.stderr.write(f"plot_field.py: {sys.executable} lacks {', '.join(missing)}, and no other python3 here has "
                     f"all of {', '.join(NEEDED)} (on Debian or Ubuntu: apt-get install python3-numpy python3-h5py "
                     "python3-matplotlib)\n")
    sys.exit(2)


def main():
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("dataset", help="FILE.h5:/DATASET, a 2-D dataset")
    p.add_argument("png", help="the picture to write")
    p.add_argument("--title", help="the title (default: from the dataset's attributes)")
    a = p.parse_args()
    if ":/" not in a.dataset:
        sys.exit(f"plot_field.py: expected FILE.h5:/DATASET, got {a.dataset!r}")
    path, name = a.dataset.rsplit(":/", 1)
    modules_or_another_python()
    import h5py
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    with h5py.File(path, "r") as f:
        if "/" + name not in f:
            sys.exit(f"plot_field.py: no dataset /{name} in {path}")
        d = f["/" + name]
        if d.ndim != 2:
            sys.exit(f"plot_field.py: /{name} in {path} is {d.ndim}-D; a 2-D field is needed")
        field = d[...]
        attrs = {k: (v.decode() if isinstance(v, bytes) else str(v)) for k, v in d.attrs.items()}
    title = a.title
    if title is None:
        rows, cols = field.shape
        title = f"{attrs.get('op', 'field')}: {rows} x {cols} cells"
        if "iteration" in attrs:
            title += f", {attrs['iteration']} iterations"
        if "residual" in attrs:
            title += f", residual {float(attrs['residual']):.2e}"
        if "grid" in attrs:
            title += f"\n{attrs.get('ranks', '?')} rank(s), grid {attrs['grid']}, {attrs.get('backend', '?')} backend"
    aspect = field.shape[0] / max(field.shape[1], 1)
    fig, ax = plt.subplots(figsize=(7.0, max(2.5, 6.0 * aspect)), dpi=110)
    image = ax.imshow(field, cmap="inferno", origin="upper", interpolation="nearest")
    fig.colorbar(image, ax=ax, shrink=0.85, label="u")
    ax.set_title(title, fontsize=10)
    ax.set_xlabel("column j (x)")
    ax.set_ylabel("row i (y)")
    fig.tight_layout()
    fig.savefig(a.png)
    print(f"wrote {a.png}")


if __name__ == "__main__":
    main()
