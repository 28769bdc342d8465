#!/usr/bin/env python3
"""Draws a 2-D field of an HDF5 dataset (tessera-stencil --output FILE.h5:/DSET) as a PNG: the field
as an image (row 0 at the top, as the rows are numbered), a colour bar, and a title from the
dataset's attributes (op, size, iterations, residual, grid). A 3-D field is drawn as one plane:
--slice AXIS=INDEX (axis 0, 1 or 2; default the middle plane along axis 0).

  python3 scripts/plot_field.py FILE.h5:/DATASET OUT.png [--title TEXT] [--slice AXIS=INDEX]

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
    p.add_argument("dataset", help="FILE.h5:/DATASET, a 2-D or 3-D dataset")
    p.add_argument("png", help="the picture to write")
    p.add_argument("--title", help="the title (default: from the dataset's attributes)")
    p.add_argument("--slice", help="AXIS=INDEX: the plane of a 3-D field to draw (default 0=middle)")
    a = p.parse_args()
    plane = None
    if a.slice is not None:
        axis, _, index = a.slice.partition("=")
        if axis not in ("0", "1", "2") or not index.lstrip("-").isdigit():
            sys.exit(f"plot_field.py: --slice: expected AXIS=INDEX with AXIS 0, 1 or 2, got {a.slice!r}")
        plane = (int(axis), int(index))
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
        if d.ndim not in (2, 3):
            sys.exit(f"plot_field.py: /{name} in {path} is {d.ndim}-D; a 2-D or 3-D field is needed")
        if d.ndim == 2 and plane is not None:
            sys.exit(f"plot_field.py: --slice: /{name} in {path} is 2-D")
        where = ""
        if d.ndim == 3:
            axis, index = plane if plane is not None else (0, d.shape[0] // 2)
            if not 0 <= index < d.shape[axis]:
                sys.exit(f"plot_field.py: --slice: index {index} outside axis {axis} of {d.shape[axis]} cells")
            cut = [slice(None)] * 3
            cut[axis] = index
            field = d[tuple(cut)]
            where = f", plane {'ijk'[axis]} = {index} of {' x '.join(str(n) for n in d.shape)}"
        else:
            field = d[...]
        attrs = {k: (v.decode() if isinstance(v, bytes) else str(v)) for k, v in d.attrs.items()}
    title = a.title
    if title is None:
        rows, cols = field.shape
        title = f"{attrs.get('op', 'field')}: {rows} x {cols} cells{where}"
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
    if where:  # a plane of a 3-D field: its two other axes, as tessera-stencil --nz names them (x, y, z)
        kept = [k for k in range(3) if k != axis]
        ax.set_xlabel(f"axis {kept[1]} ({'xyz'[kept[1]]})")
        ax.set_ylabel(f"axis {kept[0]} ({'xyz'[kept[0]]})")
    else:
        ax.set_xlabel("column j (x)")
        ax.set_ylabel("row i (y)")
    fig.tight_layout()
    fig.savefig(a.png)
    print(f"wrote {a.png}")


if __name__ == "__main__":
    main()
