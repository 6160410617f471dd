"""Which findings lead: the order (anomalies, then guidance by what it buys, then context), the first
screen's headlines, two runs' headlines compared, and the findings section of the report."""

from dataclasses import dataclass, field




KIND_ORDER = {"anomaly": 0, "guide": 1, "context": 2}


# Guidance that comes before the rest whatever its factor: the bandwidth a pageable buffer loses applies to every
# large transfer a program makes (the API overhead's factor is per call, on transfers of microseconds).
FIRST_GUIDES = ("Pin or stage",)


def order(findings):
    """Anomalies first (they change how to read the rest), then what to do, by what it buys (weight: the factor
    gained), then context."""
    return sorted(findings, key=lambda f: (KIND_ORDER.get(f.kind, 1), not f.title.startswith(FIRST_GUIDES),
                                           -f.weight))


# At most this many on the first screen; the rest in the table below.
HEADLINES = 6


TOPICS = ("downtrained", "below the link ceiling", "collapse", "Pin or stage", "Write-combining", "misaligns",
          "API overhead", "Crossover", "break-even", "Unaligned", "vadd", "at the link ceiling", "BAR store")


def headlines(findings):
    """The first finding of each topic, anomalies first, context never: what fits the first screen. "Pin or
    stage" is one topic per direction (both are what a user most needs)."""
    picked, seen = [], set()
    for f in findings:
        if f.kind == "context":
            continue
        topic = next((t for t in TOPICS if t.lower() in f.title.lower()), f.title)
        if topic == "Pin or stage":
            topic = f.title
        if topic in seen:
            continue
        seen.add(topic)
        picked.append(f)
        if len(picked) == HEADLINES:
            break
    return picked


@dataclass
class Agreement:
    first: list  # the headlines' titles of the first run
    second: list
    common: list  # titles both have
    contradicted: list  # (title, first kind, second kind): the same title said as a fault once, as guidance once
    # The findings' claims (Finding.claims, every finding's, not the headlines' alone), subject by subject:
    # repeated (said alike by both), said by one run only (the other found no difference beyond the noise there),
    # and contradicted (subject, first says, second says): the defect a rerun must not show.
    claims_repeated: list = field(default_factory=list)
    claims_first_only: list = field(default_factory=list)
    claims_second_only: list = field(default_factory=list)
    claims_contradicted: list = field(default_factory=list)

    @property
    def agrees(self):
        """All headlines but one repeated, of the longer list (five of six), none said the other way, and no claim
        said otherwise by the other run."""
        need = max(0, max(len(self.first), len(self.second)) - 1)
        return not self.contradicted and not self.claims_contradicted and len(self.common) >= need


# Titles that say the opposite of each other about the same thing.
OPPOSITES = (("Crossover: ", "No crossover: "), (" at the link ceiling", " below the link ceiling"))


def _opposite(title):
    for x, y in OPPOSITES:
        for a, b in ((x, y), (y, x)):
            if a in title:
                return title.replace(a, b)
    return None


def headline_agreement(first, second):
    """Two runs' headlines (findings lists) compared by title (titles carry no numbers: docs/findings.md). A
    headline of one run is contradicted where the other run says its opposite anywhere, or the same title as
    another kind."""
    a = {f.title: f.kind for f in headlines(first)}
    b = {f.title: f.kind for f in headlines(second)}
    all_a = {f.title: f.kind for f in first}
    all_b = {f.title: f.kind for f in second}
    common = [t for t in a if t in b]
    contradicted = [(t, a[t], b[t]) for t in common if a[t] != b[t]]
    contradicted += [(t, a[t], all_b[_opposite(t)]) for t in a if _opposite(t) in all_b]
    contradicted += [(t, all_a[_opposite(t)], b[t]) for t in b if _opposite(t) in all_a]
    ca, cb = _claims(first), _claims(second)
    return Agreement(list(a), list(b), common, contradicted,
                     claims_repeated=[k for k in ca if k in cb and ca[k] == cb[k]],
                     claims_first_only=[k for k in ca if k not in cb],
                     claims_second_only=[k for k in cb if k not in ca],
                     claims_contradicted=[(k, ca[k], cb[k]) for k in ca if k in cb and ca[k] != cb[k]])


def _claims(findings):
    out = {}
    for f in findings:
        out.update(f.claims)
    return out


def render_findings(doc, findings, overview=None, summary=""):
    """The top of the report: a one-line summary, the headline findings, the first figure, then every finding
    with the points it rests on."""
    doc.heading(1, "Findings", "findings")
    if summary:
        doc.para(summary, "small")
    top = headlines(findings)
    if top:
        doc.bullets(f.line() for f in top)
    elif findings:
        doc.para("Nothing to act on: what these files show is context (below), such as a CPU stand-in's figures or "
                 "a comparison that did not hold at two neighbouring sizes.")
    else:
        doc.para("Nothing to report: no crossover, anomaly or overhead could be computed from these files.")
    if overview is not None:
        doc.figure(overview)
    doc.toc()
    if findings:
        doc.heading(2, f"All findings ({len(findings)})")
        doc.table(["", "finding", "numbers", "rests on (file#index in its results)"],
                  [[{"anomaly": "look", "guide": "do"}.get(f.kind, "note"), f.title, f.text,
                    ", ".join(f.evidence[:6]) + (f" and {len(f.evidence) - 6} more" if len(f.evidence) > 6 else "")]
                   for f in findings],
                  row_marks=["warn" if f.kind == "anomaly" else "" for f in findings])
