"""A tiny document model written out twice: as HTML (inline CSS, no scripts,
nothing fetched from elsewhere; figures are the PNG files beside it, with their
size given so the page lays out at once) and as Markdown (the same PNGs)."""

import html
from dataclasses import dataclass, field


@dataclass
class Heading:
    level: int
    text: str
    anchor: str = ""


@dataclass
class Para:
    text: str
    kind: str = ""  # "", "note" (a warning) or "small"


@dataclass
class Bullets:
    items: list


@dataclass
class Table:
    headers: list
    rows: list
    align: str = ""  # one of l/r per column; default: first columns left, numbers right
    caption: str = ""
    row_marks: list = field(default_factory=list)  # per row: "" or "warn"


@dataclass
class Figure:
    figure: object  # plots.FigureFile


@dataclass
class Link:
    """A table cell that links to another page of the report (a trace's page): md_href where the Markdown
    form of that page is another file."""

    text: str
    href: str
    md_href: str = ""

    def __str__(self):
        return self.text


@dataclass
class Code:
    text: str


@dataclass
class Toc:
    """Where the HTML's table of contents goes (after the first screen's findings and figure)."""


class Document:
    def __init__(self, title):
        self.title = title
        self.blocks = []

    def add(self, block):
        self.blocks.append(block)
        return block

    def heading(self, level, text, anchor=""):
        return self.add(Heading(level, text, anchor))

    def para(self, text, kind=""):
        return self.add(Para(text, kind))

    def bullets(self, items):
        return self.add(Bullets(list(items)))

    def table(self, headers, rows, align="", caption="", row_marks=None):
        return self.add(Table(headers, rows, align, caption, row_marks or []))

    def figure(self, fig):
        return self.add(Figure(fig))

    def code(self, text):
        return self.add(Code(text))

    def toc(self):
        return self.add(Toc())


def _align(t, i):
    if t.align and i < len(t.align):
        return "right" if t.align[i] == "r" else "left"
    return "left"


# ---- Markdown -----------------------------------------------------------------

def _md_cell(text):
    if isinstance(text, Link):
        return f"[{_md_cell(text.text)}]({text.md_href or text.href})"
    return str(text).replace("|", "\\|").replace("\n", " ")


def to_markdown(doc):
    out = [f"# {doc.title}", ""]
    for b in doc.blocks:
        if isinstance(b, Heading):
            out += [f"{'#' * (b.level + 1)} {b.text}", ""]
        elif isinstance(b, Para):
            prefix = "> **Note:** " if b.kind == "note" else ""
            out += [prefix + b.text, ""]
        elif isinstance(b, Bullets):
            out += [f"- {item}" for item in b.items] + [""]
        elif isinstance(b, Code):
            out += ["```", b.text, "```", ""]
        elif isinstance(b, Table):
            if b.caption:
                out += [b.caption, ""]
            out.append("| " + " | ".join(_md_cell(h) for h in b.headers) + " |")
            out.append("|" + "|".join("---:" if _align(b, i) == "right" else "---" for i in range(len(b.headers)))
                       + "|")
            for row in b.rows:
                out.append("| " + " | ".join(_md_cell(c) for c in row) + " |")
            out.append("")
        elif isinstance(b, Figure):
            f = b.figure
            out += [f"![{f.title}]({f.png})", "", f"*{f.caption}*", ""]
    return "\n".join(out).rstrip() + "\n"


# ---- HTML ---------------------------------------------------------------------

CSS = """
body { font: 14px/1.45 system-ui, -apple-system, "Segoe UI", Roboto, "DejaVu Sans", sans-serif;
       color: #1d1d1f; margin: 0; background: #fafafa; }
main { max-width: 1340px; margin: 0 auto; padding: 24px 32px 64px; background: #fff; }
h1 { font-size: 26px; margin: 8px 0 4px; }
h2 { font-size: 20px; margin: 36px 0 8px; padding-top: 8px; border-top: 1px solid #e5e5e5; }
h3 { font-size: 16px; margin: 24px 0 6px; }
p.note { background: #fff4e5; border-left: 4px solid #f0a020; padding: 6px 10px; }
p.small, .caption { color: #555; font-size: 13px; }
table { border-collapse: collapse; margin: 8px 0 16px; font-size: 13px; }
th, td { padding: 3px 9px; border-bottom: 1px solid #e8e8e8; vertical-align: top; }
th { background: #f3f4f6; text-align: left; font-weight: 600; position: sticky; top: 0; }
td.r, th.r { text-align: right; font-variant-numeric: tabular-nums; white-space: nowrap; }
tr.warn td { background: #fff4e5; }
tbody tr:hover td { background: #f5f9ff; }
.tablewrap { overflow-x: auto; }
figure { margin: 12px 0 28px; }
figure img { max-width: 100%; height: auto; display: block; }
ul.findings li { margin: 2px 0; }
ul.findings li.anomaly::marker { color: #c0392b; }
figcaption { color: #555; font-size: 13px; margin-top: 4px; }
nav ul { columns: 2; margin: 4px 0; }
code, pre { font-family: ui-monospace, "DejaVu Sans Mono", monospace; font-size: 12.5px; }
pre { background: #f5f5f5; padding: 8px 10px; overflow-x: auto; white-space: pre-wrap; }
"""


def _e(text):
    return html.escape(str(text), quote=True)


def _cell(value):
    if isinstance(value, Link):
        return f'<a href="{_e(value.href)}">{_e(value.text)}</a>'
    return _e(value)


def to_html(doc):
    toc = [b for b in doc.blocks if isinstance(b, Heading) and b.level == 1 and b.anchor]
    nav = ("<nav><ul>" + "".join(f'<li><a href="#{_e(h.anchor)}">{_e(h.text)}</a></li>' for h in toc)
           + "</ul></nav>") if toc else ""
    body = [f"<h1>{_e(doc.title)}</h1>"]
    if not any(isinstance(b, Toc) for b in doc.blocks):
        body.append(nav)
    for b in doc.blocks:
        if isinstance(b, Toc):
            body.append(nav)
        elif isinstance(b, Heading):
            anchor = f' id="{_e(b.anchor)}"' if b.anchor else ""
            body.append(f"<h{b.level + 1}{anchor}>{_e(b.text)}</h{b.level + 1}>")
        elif isinstance(b, Para):
            cls = f' class="{b.kind}"' if b.kind else ""
            body.append(f"<p{cls}>{_e(b.text)}</p>")
        elif isinstance(b, Bullets):
            body.append("<ul>" + "".join(f"<li>{_e(i)}</li>" for i in b.items) + "</ul>")
        elif isinstance(b, Code):
            body.append(f"<pre>{_e(b.text)}</pre>")
        elif isinstance(b, Table):
            rows = []
            if b.caption:
                rows.append(f'<p class="caption">{_e(b.caption)}</p>')
            cls = ["r" if _align(b, i) == "right" else "" for i in range(len(b.headers))]
            rows.append('<div class="tablewrap"><table><thead><tr>'
                        + "".join(f'<th class="{c}">{_e(h)}</th>' for c, h in zip(cls, b.headers))
                        + "</tr></thead><tbody>")
            for k, row in enumerate(b.rows):
                mark = b.row_marks[k] if k < len(b.row_marks) and b.row_marks[k] else ""
                tr = f'<tr class="{mark}">' if mark else "<tr>"
                rows.append(tr + "".join(f'<td class="{c}">{_cell(v)}</td>' for c, v in zip(cls, row)) + "</tr>")
            rows.append("</tbody></table></div>")
            body.append("\n".join(rows))
        elif isinstance(b, Figure):
            f = b.figure
            body.append(f'<figure id="fig-{_e(f.name)}"><a href="{_e(f.png)}"><img src="{_e(f.png)}" '
                        f'width="{f.width}" height="{f.height}" alt="{_e(f.alt or f.title)}"></a>'
                        f'<figcaption>{_e(f.caption)}</figcaption></figure>')
    return ("<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n"
            "<meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">\n"
            f"<title>{_e(doc.title)}</title>\n<style>{CSS}</style>\n</head>\n<body>\n<main>\n"
            + "\n".join(body) + "\n</main>\n</body>\n</html>\n")
