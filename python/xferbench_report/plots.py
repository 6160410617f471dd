"""The sweep's figures (figure_style.py holds the style and layout they share).

Reading the figures: one figure per direction; one panel per backend (per
device, per run where several are shown); colour = host memory kind, line
style and marker = route, the same in every figure. Hollow markers are points
that did not reach their confidence target.
"""

import math
import multiprocessing
import os
from pathlib import Path

from . import signals
from .analysis import direction_title
from .blocks import block_figure, block_sets
from .figure_style import (LIMIT_STYLE, MAX_CURVES, PALETTE, Styler, _hollow_handle, _legend, _panels, _safe, _save,
                           _suptitle, log_y, ratio_axis, size_axis)




def transfer_curves(report, direction, group=None):
    """The curves whose points are transfers (a bandwidth means something), latency routes left out."""
    return [c for c in report.curves_for(direction, group) if not c.is_latency]


def facets(report, direction, transfers_only=False):
    """(group, route, curves) per panel: one backend and route each, at most MAX_CURVES host memory kinds
    (a route with more is split evenly over several panels); without latency routes where transfers_only."""
    out = []
    for g in report.groups_for(direction):
        gc = transfer_curves(report, direction, g) if transfers_only else report.curves_for(direction, g)
        for route in dict.fromkeys(c.route for c in gc):
            rc = [c for c in gc if c.route == route and c.trusted]
            k = math.ceil(len(rc) / MAX_CURVES)  # 0 where every point is suspect: no panel
            for i in range(k):
                out.append((g, route + (f" ({i + 1}/{k})" if k > 1 else ""), rc[i::k]))
    return out


def _facet_grid(n, ncols=2):
    nrows = math.ceil(n / ncols)
    fig, grid = _panels(nrows, ncols=min(ncols, n), ax_w=4.3, ax_h=2.3, wgap=2.3, hgap=0.75, top=0.6)
    axes = [ax for row in grid for ax in row]
    for ax in axes[n:]:
        ax.set_visible(False)
    return fig, axes[:n]


def _ceiling(curves):
    """What the link carries after protocol overhead where the points say (the tool computes it from the
    link's payload size), else its raw rate; None off the link."""
    exact = [p.link_ceiling_gbps for c in curves if c.link_limit and not c.part for p in c.points
             if p.link_ceiling_gbps]
    if exact:
        return max(exact)
    return next((c.link_limit for c in curves if c.link_limit), None)


def _suspect_count(curves):
    return sum(len(c.points) - len(c.trusted) for c in curves)


def _suspect_panel(ax, curves, styler, sizes):
    """The points left out of the other panels (above the ceiling, or a device clock that missed work), on
    their own scale so they flatten nothing."""
    trusted = {id(p) for c in curves for p in c.trusted}
    for c in curves[:MAX_CURVES]:
        pts = [p for p in c.points if id(p) not in trusted]
        styler.plot(ax, c, [p.bytes for p in pts], [c.gbps(p) for p in pts], label=f"{c.group.name} · {c.label}")
    limit = _ceiling(curves)
    if limit:
        ax.axhline(limit, label=f"link ceiling {limit:.1f} GB/s", **LIMIT_STYLE)
    size_axis(ax, sizes)
    ax.set_xlabel("")
    log_y(ax)
    ax.set_ylabel("GB/s (log)")
    more = f", first {MAX_CURVES} of {len(curves)} curves" if len(curves) > MAX_CURVES else ""
    ax.set_title(f"suspect points, not in the other panels{more}", loc="left")
    _legend(ax)


def _label_panel(ax, sizes, g, route, ylabel, any_hollow):
    """The size axis, labels and legend of one backend x route panel of the bandwidth and latency figures."""
    size_axis(ax, sizes)
    ax.set_xlabel("")
    ax.set_ylabel(ylabel)
    ax.set_title(f"{g.name} · {route}", loc="left")
    _legend(ax, extra=[_hollow_handle()] if any_hollow else ())


def bandwidth_figure(report, direction, styler, outdir):
    # Latency routes have no bandwidth: they are drawn as times only (latency_figure).
    panels = facets(report, direction, transfers_only=True)
    curves = transfer_curves(report, direction)
    if not panels and not any(c.points for c in curves):
        return None
    sizes = [p.bytes for c in curves for p in c.points]
    suspects = [c for c in curves if len(c.trusted) < len(c.points)]
    fig, axes = _facet_grid(len(panels) + bool(suspects))
    if suspects:
        _suspect_panel(axes[-1], suspects, styler, sizes)
    for ax, (g, route, cs) in zip(axes, panels):
        # Each panel scales to its own curves and link; suspect points (above the link, a clock that
        # missed work) are left out here and listed in the findings.
        top = max([c.gbps(p) for c in cs for p in c.trusted] + [c.link_limit or 0 for c in cs])
        any_hollow = any(not p.converged for c in cs for p in c.trusted)
        for c in cs:
            pts = c.trusted
            styler.plot(ax, c, [p.bytes for p in pts], [c.gbps(p) for p in pts], [not p.converged for p in pts],
                        label=c.host_memory)
        limit = _ceiling(cs)
        if limit:
            ax.axhline(limit, label=f"link ceiling {limit:.1f} GB/s", **LIMIT_STYLE)
        ax.set_ylim(0, (top if top > 0 else 1.0) * 1.08)
        _label_panel(ax, sizes, g, route, "GB/s", any_hollow)
    title = f"Bandwidth, {direction_title(direction)}"
    _suptitle(fig, title)
    caption = ("GB/s (1e9 B/s) = bytes moved per transfer / median time, against the transfer size (log2); one "
               "panel per backend and route, colour = host memory kind, each panel on its own y scale. Hollow "
               "markers did not converge.")
    if any(c.link_limit for c in curves):
        caption += " Dashed grey: the link's ceiling."
    n = _suspect_count(curves)
    if n:
        caption += f" {n} suspect points (above the ceiling, or a device clock that missed work) are left out."
    return _save(fig, outdir, f"bandwidth-{_safe(direction)}", title, caption)


def latency_figure(report, direction, styler, outdir):
    panels = facets(report, direction)
    if not panels:
        return None
    sizes = [p.bytes for c in report.curves_for(direction) for p in c.points]
    fig, axes = _facet_grid(len(panels))
    latency_panels = 0
    for ax, (g, route, cs) in zip(axes, panels):
        any_hollow = any(not p.converged for c in cs for p in c.trusted)
        for c in cs:
            pts = c.trusted
            styler.plot(ax, c, [p.bytes for p in pts], [p.median_s * 1e6 for p in pts],
                        [not p.converged for p in pts], label=c.host_memory)
        ys = [p.median_s * 1e6 for c in cs for p in c.trusted]
        if cs[0].is_latency:  # one access or round trip per repetition: no transfer, so no link line
            latency_panels += 1
            ax.set_ylim(0, max(ys) * 1.15)  # linear from 0: such times often sit within a factor of two
            _label_panel(ax, sizes, g, f"{route} (latency route)", "us per repetition", any_hollow)
            continue
        limited = [c for c in cs if c.link_limit]
        if limited:
            c = limited[0]
            k = c.points[0].bytes_per_rep / c.points[0].bytes
            xs = sorted(set(sizes))
            ax.plot(xs, [k * x / (c.link_limit * 1e9) * 1e6 for x in xs], label="time at the link ceiling",
                    **LIMIT_STYLE)
        log_y(ax)
        ax.set_ylim(min(ys) / 1.6, max(ys) * 1.6)
        _label_panel(ax, sizes, g, route, "us per transfer", any_hollow)
    title = f"Time per transfer, {direction_title(direction)}"
    _suptitle(fig, title)
    caption = ("Median time of one transfer (log-log), panels as above. The flat part on the left is the fixed cost "
               "of a transfer; the slope on the right is bandwidth.")
    if latency_panels:
        caption += (" Panels marked (latency route) are routes the file's catalogue calls latency routes: the "
                    "time of one repetition (a dependent load, a store's round trip) against the size the route ran "
                    "at, on a linear axis from 0; not a transfer.")
    return _save(fig, outdir, f"latency-{_safe(direction)}", title, caption)


def overview_figure(report, outdir):
    """The first picture: for host-to-device and device-to-host, the best each backend reaches at each size
    (any route and kind, suspect points left out), against the link ceiling."""
    moved = [d for d in report.directions if transfer_curves(report, d)]
    dirs = [d for d in ("h2d", "d2h") if d in moved] or moved[:2]
    if not dirs:
        return None
    fig, grid = _panels(1, ncols=len(dirs), ax_w=4.4, ax_h=2.2, wgap=0.7, top=0.45)
    # A CPU "device" copies at cache speed and would flatten every link-bound curve: devices only, where any.
    groups = [g for g in report.groups if g.device_type != "cpu"] or report.groups
    for ax, d in zip(grid.rows[0], dirs):
        limit = _ceiling(transfer_curves(report, d))
        for i, g in enumerate(groups):
            best = {}
            for c in transfer_curves(report, d, g):
                for p in c.trusted:
                    if c.gbps(p) > best.get(p.bytes, 0):
                        best[p.bytes] = c.gbps(p)
            if best:
                xs = sorted(best)
                ax.plot(xs, [best[x] for x in xs], marker="o", markersize=3.5, linewidth=1.6,
                        color=PALETTE[i % len(PALETTE)], label=g.name)
        if limit:
            ax.axhline(limit, label=f"link ceiling {limit:.1f}", **LIMIT_STYLE)
        size_axis(ax, [p.bytes for c in report.curves_for(d) for p in c.points])
        ax.set_xlabel("")
        ax.set_ylim(bottom=0)
        ax.set_ylabel("best GB/s")
        ax.set_title(direction_title(d), loc="left")
    _legend(grid.rows[0][-1])  # outside on the right: inside it hid the ceiling and the small sizes
    title = "Best bandwidth per backend"
    caption = ("The fastest route and host memory kind of each backend at each size (log2 size axis), suspect "
               "points left out; the panels below break this down by route and kind.")
    left = [g.name for g in report.groups if g not in groups]
    if left:
        caption += f" Not drawn here (no link crossed): {', '.join(left)}."
    return _save(fig, outdir, "overview", title, caption)


def first_use_figure(report, direction, styler, outdir):
    curves = [c for c in report.curves_for(direction) if any(p.first_use for p in c.points)]
    if not curves:
        return None
    # One row per backend and route (at most MAX_CURVES kinds), like the bandwidth figures.
    with_first_use = {id(c) for c in curves}
    rows = [(g, route, [c for c in cs if id(c) in with_first_use]) for g, route, cs in facets(report, direction)]
    rows = [r for r in rows if r[2]]
    if not rows:
        return None
    sizes = [p.bytes for c in curves for p in c.points]
    fig, axes = _panels(len(rows), ncols=3, ax_w=3.1, ax_h=2.3, wgap=0.85, hgap=0.95, top=0.95)
    be = [b for b in report.break_even if b.direction == direction]
    for row, (g, route, cs) in zip(axes, rows):
        ax_setup, ax_first, ax_be = row
        handles = []
        for c in cs:
            pts = [p for p in c.points if p.first_use]
            xs = [p.bytes for p in pts]
            handles.append(styler.plot(ax_setup, c, xs, [(p.first_use.alloc_s + p.first_use.touch_s) * 1e6
                                                          for p in pts], label=c.host_memory))
            styler.plot(ax_first, c, xs, [p.first_use.first_transfer_s / p.median_s for p in pts])
        for b in be:
            if b.group != g or b.host_memory not in {c.host_memory for c in cs} or b.route != cs[0].route:
                continue
            # "never" is a gap in the line, not a point.
            if any(math.isfinite(v) for v in b.by_size.values()):
                styler.plot(ax_be, b, list(b.by_size), [v if math.isfinite(v) else math.nan
                                                        for v in b.by_size.values()])
        for ax in row:
            size_axis(ax, sizes)
        log_y(ax_setup)
        ax_setup.set_ylabel("allocate + pin + first touch (us)")
        ax_setup.set_title(f"{g.name} · {route}\nsetup of a fresh buffer", loc="left")
        ratio_axis(ax_first, [l for line in ax_first.lines for l in line.get_ydata()])
        ax_first.set_ylabel("first transfer / steady-state transfer")
        ax_first.set_title("first transfer from a fresh buffer", loc="left")
        log_y(ax_be)
        ax_be.set_ylabel("transfers to pay off")
        baseline = next((b.baseline for b in be if b.group == g and b.route == cs[0].route), None)
        ax_be.set_title(f"break-even against {baseline}" if baseline else "break-even (one kind only)", loc="left")
        if not ax_be.lines:
            ax_be.text(0.5, 0.5, "no kind pays off\nagainst the baseline" if baseline else "nothing to compare",
                       transform=ax_be.transAxes, ha="center", va="center", color="0.4")
        _legend(ax_be, handles=handles)
    title = f"First use, {direction_title(direction)}"
    _suptitle(fig, title)
    caption = ("Left: one-off cost of allocating (and pinning or registering) a buffer and writing it once. "
               "Middle: the first transfer from that fresh buffer against the steady-state median. Right: how many "
               "transfers a kind needs before its costlier setup is paid back by faster transfers, against the "
               "baseline kind; sizes where it never pays off are left out.")
    return _save(fig, outdir, f"first-use-{_safe(direction)}", title, caption)


def api_figure(report, cmp, styler, outdir):
    has_matched = any(pc.matched for pc in cmp.pairs)
    if has_matched:
        fig, axes = _panels(1, ncols=2, ax_w=5.6, ax_h=3.6, wgap=0.9)
    else:
        fig, axes = _panels(1, ax_h=3.6)
    ax = axes[0, 0]
    sizes = [n for pc in cmp.pairs for n in pc.sizes]
    for i, pc in enumerate(cmp.pairs):
        xs = pc.sizes
        ax.plot(xs, [pc.ratio[n] for n in xs], marker="o", markersize=4, linewidth=1.8,
                color=PALETTE[(i + 10) % len(PALETTE)] if i else "#000000",
                label=f"{pc.other.name} / {cmp.reference.name}")
    size_axis(ax, sizes)
    ratio_axis(ax, [v for pc in cmp.pairs for v in pc.ratio.values()])
    ax.set_ylabel("time ratio (above 1x: slower)")
    ax.set_title(f"fastest route and kind of each, against {cmp.reference.name}", loc="left")
    _legend(ax) if not has_matched else ax.legend(loc="best", frameon=False)
    if has_matched:
        ax2 = axes[0, 1]
        markers = ["o", "s", "^", "D", "v"]
        for i, pc in enumerate(cmp.pairs):
            for route, kind, r in pc.matched:
                xs = sorted(r)
                ls, _ = styler.style(route)
                label = f"{route} · {kind}" + (f" ({pc.other.name})" if len(cmp.pairs) > 1 else "")
                ax2.plot(xs, [r[n] for n in xs], linestyle=ls, marker=markers[i % len(markers)], markersize=3.5,
                         linewidth=1.2, color=styler.color(kind), label=label)
        size_axis(ax2, sizes)
        ratio_axis(ax2, [v for pc in cmp.pairs for _, _, r in pc.matched for v in r.values()])
        names = ", ".join(pc.other.name for pc in cmp.pairs if pc.matched)
        ax2.set_title(f"same route and kind: {names} / {cmp.reference.name}", loc="left")
        _legend(ax2)
    title = f"API comparison, {direction_title(cmp.direction)}"
    _suptitle(fig, title)
    caption = (f"Ratio of median times by size against {cmp.reference.name} (log scale; 2x = takes twice as long). "
               "Left: the fastest way each backend has at each size. Right, where present: curves measured through "
               "the same route and host memory kind on both.")
    return _save(fig, outdir, f"api-{_safe(cmp.direction)}", title, caption)


_SHARED = {}  # the report, handed to forked workers by inheritance rather than pickling


def _draw(task):
    section, index, outdir = task
    report = _SHARED["report"]
    styler = Styler(report.kinds, report.routes)
    if section == "api":
        return section, api_figure(report, report.api[index], styler, outdir)
    if section == "overview":
        return section, overview_figure(report, outdir)
    if section == "blocks":
        return section, block_figure(block_sets(report.runs)[index], outdir, index)
    draw = {"bandwidth": bandwidth_figure, "latency": latency_figure, "first_use": first_use_figure}[section]
    return section, draw(report, report.directions[index], styler, outdir)


def default_jobs():
    try:
        return len(os.sched_getaffinity(0))
    except AttributeError:
        return os.cpu_count() or 1


def make_figures(report, outdir, jobs=None):
    """All figures, in report order: {section: [FigureFile]}.

    Figures are independent, so with jobs > 1 they are drawn in forked worker
    processes (where the platform forks; elsewhere one after another)."""
    tasks = [(section, i, str(outdir)) for i in range(len(report.directions))
             for section in ("bandwidth", "latency", "first_use")]
    tasks += [("api", i, str(outdir)) for i in range(len(report.api))]
    tasks += [("blocks", i, str(outdir)) for i in range(len(block_sets(report.runs)))]
    tasks.insert(0, ("overview", 0, str(outdir)))
    jobs = min(jobs or default_jobs(), len(tasks))
    _SHARED["report"] = report
    pool = None
    try:
        if jobs > 1 and "fork" in multiprocessing.get_all_start_methods():
            Path(outdir).mkdir(parents=True, exist_ok=True)
            # Forked with the signals held, so that no worker meets one before worker_defaults takes them over;
            # one that arrived meanwhile is raised as the block ends, when pool is already named for the finally.
            with signals.held():
                pool = multiprocessing.get_context("fork").Pool(jobs, initializer=signals.worker_defaults)
            results = pool.map(_draw, tasks, chunksize=1)
        else:
            results = [_draw(t) for t in tasks]
    finally:
        if pool is not None:  # ends and joins the workers (as leaving `with pool` did) before render cleans up
            pool.terminate()
        _SHARED.clear()
    out = {"overview": [], "bandwidth": [], "latency": [], "first_use": [], "api": [], "blocks": []}
    for section, fig in results:
        if fig is not None:
            out[section].append(fig)
    return out
