"""What every finding module shares: the Finding record, the thresholds that decide when a comparison
holds (docs/findings.md), and the helpers that read points and curves."""

from dataclasses import dataclass, field

from ..spread import clearly_faster
from ..units import format_gbps


# A link is "below its ceiling" when the best trusted point of a direction
# reaches less than this share of the ceiling the tool computed for the link.
BELOW_CEILING = 0.85
# A curve "collapses" where a larger size runs at less than 1/COLLAPSE of the
# best bandwidth the curve reached at a smaller size.
COLLAPSE = 4.0
# Misalignment is reported where the unaligned kind takes this much longer.
MISALIGN_MIN = 1.10
MISALIGN_MIN_BYTES = 4096
# A peer pair is "slow" below this share of the median of the pairs between two devices.
PEER_SLOW = 0.8
# Devices at once "scale" when their aggregate reaches this share of the sum of their figures alone.
AT_ONCE_SCALES = 0.8


# Two neighbouring sizes at least: one size alone is what a rerun contradicts.
CONFIRMING_SIZES = 2
# Pinned memory "pays" where it moves at least twice the pageable rate, the staged copier where it moves a quarter
# more, at every size from there on, in the bandwidth regime (64 KiB and up; below it the call's own cost rules, the
# API overhead finding's subject). Nearer thresholds moved the start a size between two runs
# (docs/decisions/0004-finding-thresholds.md).
PIN_PAYS = 2.0
STAGED_PAYS = 1.25
BANDWIDTH_MIN_BYTES = 64 << 10


@dataclass
class Finding:
    # "anomaly" (look at this), "guide" (what to do), or "context" (expected
    # behaviour, a stand-in device, a caveat on some points: never a headline)
    kind: str
    title: str  # a short name for the list
    text: str  # the sentence with its numbers
    evidence: list = field(default_factory=list)  # "file#index" of the points it rests on
    weight: float = 0.0  # orders the list within its kind (larger first)
    # What it says, subject by subject ("<block set> at 256 KiB" -> "blocks-kernel"), where a finding says one
    # thing per subject that a rerun could say otherwise: two runs compared (headlines.headline_agreement) disagree
    # where both claim a subject and say different things.
    claims: dict = field(default_factory=dict)

    def line(self):
        return f"{self.title}: {self.text}"


def cite(*points):
    return [f"{p.run.path.name}#{p.index}" for p in points if p is not None]


def stand_in(group):
    """A CPU device (the host reference, OpenCL on PoCL, Vulkan on lavapipe): its figures are the host's memory
    system, not a link, so what they show is context."""
    return group.device_type == "cpu"


def _kind(group, kind):
    return "context" if stand_in(group) else kind


def _runs(holding, sizes):
    """The longest run of neighbouring sizes (consecutive in `sizes`) all in `holding`."""
    best, cur = [], []
    for n in sizes:
        cur = cur + [n] if n in holding else []
        if len(cur) > len(best):
            best = cur
    return best


def _wall(p):
    """What a program waits for: the wall clock where the point has one (device
    events leave out the API's own work, and backends time differently)."""
    return p.wall_median_s or p.median_s


def _curves_by(report, key):
    out = {}
    for c in report.curves:
        out.setdefault(key(c), []).append(c)
    return out


def _range(values):
    lo, hi = min(values), max(values)
    return format_gbps(lo) if f"{lo:.2f}" == f"{hi:.2f}" else f"{format_gbps(lo)}-{format_gbps(hi)}"


def _wall_gbps(p):
    return p.bytes_per_rep / _wall(p) / 1e9


def quote_wall_gbps(p):
    """A point's wall-clock GB/s as a finding may quote it: its median where core found it settled, else the range
    its samples support (two default runs on the H200 headlined one pageable point as 12.07 and 15.71 GB/s)."""
    rng = p.wall_gbps_range if p.wall_median_s else p.gbps_range
    if p.settled or not rng:
        return format_gbps(_wall_gbps(p))
    lo, hi = rng
    return format_gbps(lo) if format_gbps(lo) == format_gbps(hi) else f"{format_gbps(lo)}-{format_gbps(hi)}"


def _fastest_by_size(curves, min_bytes=0):
    """{bytes: point} the fastest on the wall clock among the curves' trusted points of min_bytes and more."""
    best = {}
    for c in curves:
        for p in c.trusted:
            if p.bytes < min_bytes:
                continue
            if p.bytes not in best or _wall(p) < _wall(best[p.bytes]):
                best[p.bytes] = p
    return best


def _pays_from(faster, slower, factor, time=_wall):
    """The smallest size from which `faster` ({bytes: point}) is clearly faster than `slower` by `factor` (in
    `time`) at every larger common size, CONFIRMING_SIZES of them at least; None where it does not."""
    common = sorted(set(faster) & set(slower))
    start = None
    for n in reversed(common):
        f, s = faster[n], slower[n]
        if not (clearly_faster(f, s) and time(s) / time(f) >= factor):
            break
        start = n
    if start is None or len([n for n in common if n >= start]) < CONFIRMING_SIZES:
        return None
    return start


def _times(n):
    return "1 transfer" if n == 1 else f"{n:,} transfers"


def _points_at(report, group, route, direction, kinds, sizes):
    pts = []
    for c in report.curves:
        if c.group == group and c.route == route and c.direction == direction and c.host_memory in kinds:
            pts += [p for p in c.points if p.bytes in sizes]
    return pts
