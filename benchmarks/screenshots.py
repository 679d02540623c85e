"""First screens of the built book as a reader sees them (issue 53): 1280 × 900 screenshots of the landing
page, one summary page, the molecular chapter and the Table 3 chapter, with the heights the issue bounds.

    python benchmarks/screenshots.py _build/html [--out benchmarks/results/screenshots]

``_build/html`` is a built site (``make book`` leaves it there; the smoke test builds one under pytest's
temporary folder). The site is served on loopback and every request elsewhere is aborted, as in the
browser test (``tests/test_book.py``). Writes one PNG per page and ``screens.json`` (per page: the glance's
height, where the landing page's claim table and fifth finding end, and how many tables scroll sideways;
under ``"site"``, the tables of every page under ``chapters/`` and how many of them scroll sideways at 1280 px).
Needs Debian's ``chromium`` and the ``playwright`` package (the ``test`` extra).
"""

from __future__ import annotations

import argparse
import functools
import http.server
import json
import shutil
import threading
from pathlib import Path

#: (file name, page below the site root)
PAGES = [
    ("landing", "chapters/intro/index.html"),
    ("summary-quantized-mis", "chapters/quantized-mis/summary.html"),
    ("molecular", "chapters/quantized-mis/05-molecular.html"),
    ("table3", "chapters/quantized-mis/06-table3-investigation.html"),
]

_MEASURE = """() => {
  const b = e => e ? Math.round(e.getBoundingClientRect().bottom + window.scrollY) : null;
  const g = document.querySelector('div.admonition.qlib-glance');
  const items = [...document.querySelectorAll('main ol > li')].slice(0, 5);
  const tables = [...document.querySelectorAll('main table')];
  return {glance_px: g ? Math.round(g.getBoundingClientRect().height) : null,
          claim_table_ends_px: b(document.querySelector('table.qlib-claims-table')),
          fifth_finding_ends_px: items.length === 5 ? b(items[4]) : null,
          tables: tables.length,
          tables_scrolling: tables.filter(t => t.scrollWidth > t.clientWidth + 2).length};
}"""


class _Quiet(http.server.SimpleHTTPRequestHandler):
    def log_message(self, *args):   # noqa: D102 - no request log on the terminal
        pass


def _visit(page, url: str) -> None:
    """Open ``url`` and wait for MathJax where the page has maths (widths change when it typesets)."""
    page.goto(url, wait_until="networkidle")
    if page.locator(".math").count():
        try:
            page.wait_for_function("document.querySelectorAll('mjx-container').length > 0", timeout=20000)
        except Exception:
            pass


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("site", type=Path, help="a built HTML site (its root holds chapters/)")
    ap.add_argument("--out", type=Path, default=Path(__file__).resolve().parent / "results" / "screenshots")
    ap.add_argument("--chromium", default=shutil.which("chromium") or "/usr/bin/chromium")
    a = ap.parse_args(argv)
    if not (a.site / "chapters").is_dir():
        raise SystemExit(f"site must be a built book (with chapters/), got {a.site}")
    from playwright.sync_api import sync_playwright

    handler = functools.partial(_Quiet, directory=str(a.site))
    srv = http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler)
    threading.Thread(target=srv.serve_forever, daemon=True).start()
    base = f"http://127.0.0.1:{srv.server_port}/"
    a.out.mkdir(parents=True, exist_ok=True)
    report = {}
    try:
        with sync_playwright() as p:
            browser = p.chromium.launch(executable_path=a.chromium, args=["--no-sandbox", "--disable-gpu"])
            page = browser.new_page(viewport={"width": 1280, "height": 900})
            page.route("**/*", lambda r: r.continue_() if r.request.url.startswith(base) else r.abort())
            site = {"pages": 0, "tables": 0, "tables_scrolling": 0, "scrolling": []}
            for q in sorted(x.relative_to(a.site).as_posix() for x in (a.site / "chapters").rglob("*.html")):
                _visit(page, base + q)
                m = page.evaluate(_MEASURE)
                site["pages"] += 1
                site["tables"] += m["tables"]
                site["tables_scrolling"] += m["tables_scrolling"]
                if m["tables_scrolling"]:
                    site["scrolling"].append([q, m["tables_scrolling"], m["tables"]])
            report["site"] = site
            print("site", {k: v for k, v in site.items() if k != "scrolling"})
            for name, rel in PAGES:
                if not (a.site / rel).is_file():
                    print(f"missing: {rel}")
                    continue
                _visit(page, base + rel)
                page.screenshot(path=str(a.out / f"{name}.png"))
                report[name] = {"page": rel, **page.evaluate(_MEASURE)}
                print(name, report[name])
            browser.close()
    finally:
        srv.shutdown()
    (a.out / "screens.json").write_text(json.dumps(report, indent=1) + "\n")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
