#!/usr/bin/env python3
"""What jobs/gather_scaling.py draws, read back from the matplotlib figure it makes, for reports
written here (not by the app), so that every expected value is known:
  - Amdahl's fitted efficiency is 1 at one rank (the fit's own T(1)), whatever the measured T(1);
  - a projection whose held-out check failed beyond the threshold is not drawn, and the panel says
    so (also for a report that carries such a projection);
  - a drawn projection says how far it extrapolates (from 2 ranks measured to 4096: 2048x);
  - the fit and the model are told apart in the legend;
  - the measured points carry their spread: error bars spanning the report's efficiency interval.
Exit 77 (skipped) without matplotlib.

usage: test_gather_scaling.py SOURCE_DIR
"""
import importlib.util
import os
import sys
import tempfile

try:
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.figure
    import matplotlib.pyplot as plt
    from matplotlib.container import ErrorbarContainer
except ImportError as e:
    print(f"SKIP: needs matplotlib ({e})")
    sys.exit(77)

src = sys.argv[1]
spec = importlib.util.spec_from_file_location("gather_scaling", os.path.join(src, "jobs", "gather_scaling.py"))
gather = importlib.util.module_from_spec(spec)
spec.loader.exec_module(gather)

failures = []


def check(cond, what):
    if not cond:
        failures.append(what)
        print("FAIL:", what)
    return cond


def point(p, t, lo, hi, t1, strong):
    eff = (t1 / t / p) if strong else t1 / t
    q = {"ranks": p, "size": 1000 * (1 if strong else p), "time_s": t, "time_min_s": lo, "time_max_s": hi,
         "time_ci95_s": [lo, hi], "spread": (hi - lo) / t, "noisy": (hi - lo) / t > 0.2,
         "efficiency": eff, "efficiency_interval": [eff * 0.9, eff * 1.1]}
    q["speedup" if strong else "scaled_speedup"] = eff * p
    return q


def report(ranks_times, check_error, projection_to, name):
    t1 = ranks_times[0][1]
    strong = {"n": 1000, "points": [point(p, t, 0.95 * t, 1.3 * t, t1, True) for p, t in ranks_times],
              # The fit's own T(1) differs from the measured one (as least squares makes it).
              "amdahl": {"valid": True, "serial_fraction": 0.2, "t1_s": 1.3 * t1, "residual_rms": 0.1,
                         "residual_max": 0.15},
              "model_check": {"fit_ranks": [1, 2], "max_abs_relative_error": check_error,
                              "points": [{"ranks": p, "relative_error": check_error} for p, _ in ranks_times[2:]]}}
    proj = [{"ranks": p, "time_s": t1 / p, "speedup": float(p), "efficiency": 1.0}
            for p in [1, 2, 4, 8, 16, 32, 64, 128, 256, 512, 1024, 2048, 4096] if p <= projection_to]
    strong["projection"] = proj
    weak = {"n_per_rank": 1000, "points": [point(p, t1 * (1 + 0.1 * p), t1, 1.5 * t1 * (1 + 0.1 * p), t1, False)
                                           for p, _ in ranks_times],
            "gustafson": {"valid": True, "serial_fraction": 0.1, "residual_rms": 0.01},
            "model_check": strong["model_check"],
            "projection": [{"ranks": q["ranks"], "time_s": t1, "scaled_speedup": float(q["ranks"]), "efficiency": 1.0}
                           for q in proj]}
    return {"app": "tessera-scaling", "op": "sum", "dtype": "float32", "backend": "cpu", "world_size": ranks_times[-1][0],
            "strong": strong, "weak": weak, "_path": name}


def draw(rep):
    captured = []
    close = plt.close
    plt.close = lambda fig=None: captured.append(fig) if isinstance(fig, matplotlib.figure.Figure) else close(fig)
    try:
        gather.plot_op("sum", [rep], os.path.join(tempfile.mkdtemp(), "plot.png"))
    finally:
        plt.close = close
    fig = captured[0]
    axes = fig.axes
    return axes[0], axes[1], axes[2], axes[3]


def label_lines(ax, word):
    """The lines drawn (with data) whose label holds word."""
    return [line for line in ax.get_lines() if word in (line.get_label() or "").lower() and len(line.get_xdata())]


def texts(ax):
    return " ".join(t.get_text() for t in ax.texts) + " " + " ".join(
        t.get_text() for t in (ax.get_legend().get_texts() if ax.get_legend() else []))


# 1. A failed held-out check (+475%, the demo's): no projection drawn, the panel says why.
withheld = report([(1, 0.010), (2, 0.007), (4, 0.0075)], 4.75, 4096, "report_a.json")
s_ax, e_ax, ws_ax, we_ax = draw(withheld)
for ax, where in ((s_ax, "strong speedup"), (e_ax, "strong efficiency"), (ws_ax, "weak speedup"), (we_ax, "weak efficiency")):
    check(not label_lines(ax, "projection"), f"{where}: a projection is drawn although its check failed by 475%")
check("withheld" in texts(s_ax).lower(), f"strong speedup panel does not say the projection was withheld: {texts(s_ax)!r}")

# 2. Amdahl's efficiency is 1 at one rank; the fit is named a fit.
amdahl = label_lines(e_ax, "amdahl")
if check(len(amdahl) == 1, f"efficiency panel: {len(amdahl)} Amdahl lines"):
    x, y = amdahl[0].get_data()
    at_one = [yy for xx, yy in zip(x, y) if xx == 1]
    check(at_one and abs(at_one[0] - 1) < 1e-12, f"Amdahl efficiency at 1 rank is {at_one}, not 1")
    check("fit" in amdahl[0].get_label().lower(), f"Amdahl line label {amdahl[0].get_label()!r} does not say it is a fit")

# 3. The spread: error bars on the measured efficiency spanning the report's interval at 2 ranks.
bars = [c for c in e_ax.containers if isinstance(c, ErrorbarContainer)]
if check(bars, "efficiency panel: no error bars on the measured points"):
    segments = [seg for c in bars for col in c.lines[2] for seg in col.get_segments()]
    want = withheld["strong"]["points"][1]["efficiency_interval"]
    check(any(abs(seg[0][0] - 2) < 1e-9 and abs(min(seg[0][1], seg[1][1]) - want[0]) < 1e-9
              and abs(max(seg[0][1], seg[1][1]) - want[1]) < 1e-9 for seg in segments),
          f"no error bar at 2 ranks spanning {want}: {[s.tolist() for s in segments]}")

# 4. A checked projection from 2 ranks to 4096 is drawn, named the model's, and says it extrapolates 2048x.
checked = report([(1, 0.010), (2, 0.0052)], 0.0, 4096, "report_b.json")
checked["strong"]["projection_status"] = "unchecked"  # 1 and 2 ranks: nothing held out
s_ax, e_ax, _, _ = draw(checked)
proj = label_lines(s_ax, "projection")
if check(len(proj) == 1, f"unchecked projection from 2 ranks: {len(proj)} projection lines"):
    label = proj[0].get_label()
    check("model" in label.lower() and "2048x" in label, f"projection label {label!r} lacks 'model' or '2048x'")

if failures:
    print(f"{len(failures)} checks failed")
    sys.exit(1)
print("all checks passed")
