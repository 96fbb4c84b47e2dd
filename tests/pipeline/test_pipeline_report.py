"""The report page, opened in headless Chromium (Debian's chromium, driven by selenium through
/usr/bin/chromedriver) at a laptop's size and a phone's: it renders offline with its charts
drawn from the fleet's figures, a summary first, sections to jump between, long tables
collapsed, charts whose "other" series does not flatten the named ones.

Two pages: the synthetic fleet's report (tests/pipeline/fleet.py: its figures known by
construction), and a page at the report's bounds made by the pure page module ([report]
max_chart_bins time bins, chart_series named series and an "other" that dwarfs them,
max_table_rows rows per table, long names). Screenshots of the fleet's page, whole, at both
sizes are kept in var/test-artifacts/pipeline-report-{laptop,phone}.png (git-ignored)."""

from __future__ import annotations

import base64
import itertools
import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from selenium import webdriver
from selenium.webdriver.common.by import By
from selenium.webdriver.support.ui import WebDriverWait

from pyjoynr.pipeline.config import ReportSettings
from pyjoynr.pipeline.report import OTHER
from pyjoynr.pipeline.report.page import OPEN_ROWS, Chart, Fact, Section, Table, render
from tests.pipeline import fleet

CHROMIUM = Path("/usr/bin/chromium")
CHROMEDRIVER = Path("/usr/bin/chromedriver")
ARTIFACTS = Path(__file__).resolve().parents[2] / "var" / "test-artifacts"
LAPTOP = (1366, 900)
PHONE = (390, 844)

pytestmark = pytest.mark.timeout(300)


@pytest.fixture(scope="module")
def report_page(fleet_page: Path) -> Path:
    """The page of the fleet's report (tests/pipeline/conftest.py: the jobs run once for the
    figures' tests and this page)."""
    return fleet_page


# ---------------------------------------------------------------------- a page at the bounds

BOUNDS = ReportSettings()
BIG_TOTAL = 1_234
#: interface names as long as real ones get (with "/" in them)
LONG = [f"com.example.vehicle.cluster{n}/infotainment/media/RadioStationDirectory{n}"
        for n in range(BOUNDS.chart_series)]
OTHER_MESSAGES = 50_000


def bounded_sections() -> list[Section]:
    """Sections as full as the report lets them be: every chart with as many series and bins
    as the settings allow, the "other" series far above the named ones, every table at
    max_table_rows rows (of more), long cell values."""
    bins = BOUNDS.max_chart_bins
    start = fleet.H0 - (bins - 1) * fleet.HOUR
    xs = [start + i * fleet.HOUR for i in range(bins)]
    named = [{"name": f"vehicle \u00b7 {name}", "values": [(i * 7 + n * 13) % 90 + n
                                                            for i in range(bins)]}
             for n, name in enumerate(LONG)]
    traffic = {"kind": "lines", "x": xs, "binMs": fleet.HOUR, "yLabel": "messages per hour",
               "series": named,
               "other": {"name": "other: 412 more interfaces, summed",
                         "values": [OTHER_MESSAGES - 97 * (i % 11) for i in range(bins)]}}
    categories = [*LONG, OTHER]
    registrations = {"kind": "bars", "categories": categories, "yLabel": "entries",
                     "otherCategory": OTHER, "otherLabel": "other: 412 more interfaces, summed",
                     "series": [{"name": gbid, "values": [*(40 + 3 * n + g for n in
                                                             range(len(LONG))), 15_000]}
                                for g, gbid in enumerate(("g1", "g2", "joynrdefaultgbid"))]}
    reasons = {"kind": "bars", "yLabel": "messages",
               "categories": [f"refused-because-of-a-rather-long-reason-code-{n}"
                              for n in range(30)],
               "series": [{"name": "refused", "values": [1_000_000 // (n + 1)
                                                         for n in range(30)]}]}
    columns = ["participant_id", "cluster_controller_id", "interface_name", "bytes",
               "last_seen_ms"]
    rows = [[f"{n:08x}-7c1e-4d8a-9b1f-3f2a9c1d5e{n:02x}", f"cluster-controller-{n}",
             LONG[n % len(LONG)], 12_345_678 * (n + 1), fleet.NOW - n * fleet.HOUR]
            for n in range(BOUNDS.max_table_rows)]
    tables = [Table(f"Table {t}", columns, rows, BIG_TOTAL, f"some/table{t}", f"big-{t}")
              for t in range(3)]
    return [
        Section("summary", "Summary", facts=[
            Fact("messages", 123_456_789,
                 detail="last hour (09:00): 1,234, \u2212567 (\u221231 %)"),
            Fact("bytes delivered", 98_765_432_100, "bytes"),
            Fact("housekeeping would purge", 45_678, alert=True,
                 detail="entries of 321 cluster controller(s) (321 stale), 93.2 % of the "
                        "directory: above [housekeeping] max_purge_share")]),
        Section("traffic", "Traffic", charts=[Chart("traffic", "Messages per interface and "
                                                    "hour (UTC)", traffic)], tables=tables),
        Section("directory", "Directory", charts=[
            Chart("registrations", "Registrations per interface and backend (GBID)",
                  registrations),
            Chart("refusals", "Refusals by reason", reasons)]),
    ]


@pytest.fixture(scope="module")
def bounded_page(tmp_path_factory: pytest.TempPathFactory) -> Path:
    page = tmp_path_factory.mktemp("bounded") / "index.html"
    page.write_text(render("Bounds", ["the largest page the settings allow"],
                           bounded_sections()), encoding="utf-8")
    return page


# ---------------------------------------------------------------------- the browser


@pytest.fixture
def browser() -> Iterator[webdriver.Chrome]:
    for needed in (CHROMIUM, CHROMEDRIVER):
        assert needed.exists(), (f"{needed} is missing: apt-get install -y chromium "
                                 "chromium-driver (bin/test installs them as root)")
    options = webdriver.ChromeOptions()
    options.binary_location = str(CHROMIUM)
    for argument in ("--headless=new", "--no-sandbox", "--disable-gpu",
                     "--disable-dev-shm-usage", "--hide-scrollbars"):
        options.add_argument(argument)
    options.set_capability("goog:loggingPrefs", {"browser": "ALL"})
    driver = webdriver.Chrome(options=options,
                              service=webdriver.ChromeService(executable_path=str(CHROMEDRIVER)))
    try:
        yield driver
    finally:
        driver.quit()


def open_page(driver: webdriver.Chrome, page: Path, size: tuple[int, int]) -> None:
    """The page at a viewport of ``size`` (a phone's: as a mobile browser, with its viewport
    meta), its charts drawn."""
    width, height = size
    driver.execute_cdp_cmd("Emulation.setDeviceMetricsOverride", {
        "width": width, "height": height, "deviceScaleFactor": 1, "mobile": width < 600})
    driver.get(page.as_uri())
    WebDriverWait(driver, 30).until(
        lambda d: d.find_element(By.TAG_NAME, "body").get_attribute("data-charts-done"))
    # a phone's browser widens its layout to a page wider than the screen (and zooms out)
    shown = driver.execute_script("return window.innerWidth")
    assert shown == width, f"{page.name} is laid out {shown} px wide on a {width} px screen"


def no_errors(driver: webdriver.Chrome) -> None:
    """No script error, no Content Security Policy violation."""
    errors = [entry for entry in driver.get_log("browser") if entry["level"] == "SEVERE"]
    assert errors == []
    for svg in driver.find_elements(By.CSS_SELECTOR, "svg[data-chart]"):
        assert svg.get_attribute("data-error") is None, svg.get_attribute("data-error")


def whole_page_png(driver: webdriver.Chrome, target: Path) -> None:
    width, height = driver.execute_script(
        "return [window.innerWidth, document.scrollingElement.scrollHeight]")
    shot = driver.execute_cdp_cmd("Page.captureScreenshot", {
        "format": "png", "captureBeyondViewport": True,
        "clip": {"x": 0, "y": 0, "width": width, "height": height, "scale": 1}})
    target.parent.mkdir(parents=True, exist_ok=True)
    target.write_bytes(base64.b64decode(shot["data"]))


def marks(driver: webdriver.Chrome, chart: str) -> int:
    svg = driver.find_element(By.CSS_SELECTOR, f'svg[data-chart="{chart}"]')
    assert svg.get_attribute("data-rendered") == "true", chart
    assert svg.get_attribute("data-error") is None, svg.get_attribute("data-error")
    drawn = len(svg.find_elements(By.CSS_SELECTOR, "g.marks rect, g.marks circle"))
    assert str(drawn) == svg.get_attribute("data-marks")
    return drawn


def legends(driver: webdriver.Chrome) -> list[str]:
    return [item.text for item in driver.find_elements(By.CSS_SELECTOR, ".legend span")]


# ---------------------------------------------------------------------- the fleet's page


def test_the_report_renders_offline_with_its_charts(report_page: Path,
                                                    browser: webdriver.Chrome) -> None:
    html = report_page.read_text()
    assert "http://" not in html.replace("http://www.w3.org/2000/svg", "")
    assert "https://" not in html  # nothing fetched: styles, data and script are inline
    assert "Content-Security-Policy" in html and "default-src 'none'" in html
    open_page(browser, report_page, LAPTOP)
    # registrations: one bar segment per (interface, GBID) with entries (3 interfaces x 2)
    assert marks(browser, "registrations") == 6
    values = [int(v.get_attribute("data-value") or 0) for v in browser.find_elements(
        By.CSS_SELECTOR, 'svg[data-chart="registrations"] g.marks rect')]
    assert sum(values) == fleet.DIRECTORY_SUMMARY["entries"]
    # stale over time: an hourly point from the first one going stale (26 h ago) to now
    assert marks(browser, "stale") == 27
    # traffic per interface and hour: 4 interfaces over 2 hours, 5 non-zero points; drops: 3
    assert marks(browser, "traffic") == 5
    assert marks(browser, "drops") == 3
    assert marks(browser, "drop-reasons") == 2
    assert marks(browser, "refusals") == 2
    legend = browser.find_element(By.CSS_SELECTOR, 'svg[data-chart="traffic"] + .legend').text
    assert "d.vehicle \u00b7 test/Radio" in legend and fleet.UNKNOWN in legend
    # the hostile peer is text in a table cell, never markup
    cells = [c.text for c in browser.find_elements(By.CSS_SELECTOR, "#security td")]
    assert fleet.HOSTILE_PEER in cells
    assert browser.find_elements(By.CSS_SELECTOR, "img") == []
    no_errors(browser)


def test_the_summary_comes_first_within_the_first_screen(report_page: Path,
                                                          browser: webdriver.Chrome) -> None:
    open_page(browser, report_page, LAPTOP)
    first = browser.execute_script("""
        const summary = document.querySelector('main > section');
        const bottom = summary.getBoundingClientRect().bottom + window.scrollY;
        const tables = [...document.querySelectorAll('table, svg[data-chart]')].map(
            t => t.getBoundingClientRect().top + window.scrollY);
        return [summary.id, bottom, Math.min(...tables), window.innerHeight];""")
    section, bottom, first_table_or_chart, screen = first
    assert section == "summary"
    assert bottom <= screen, f"the summary ends at {bottom} px, below the first screen"
    assert first_table_or_chart > bottom
    cards = {card.find_element(By.TAG_NAME, "dt").text:
             card.find_element(By.TAG_NAME, "dd").text
             for card in browser.find_elements(By.CSS_SELECTOR, "#summary dl.facts > div")}
    directory = fleet.DIRECTORY_SUMMARY
    traffic = fleet.TRAFFIC_SUMMARY
    drift = sum(fleet.DRIFT_TOTALS[k] for k in ("not_in_directory", "expired_in_directory",
                                                "other_gbid", "other_topic"))
    # the directory: of the 2 stale cluster controllers cc-b went stale 6 h ago (cc-c 26 h);
    # both expired rows expired in the last hour
    assert cards["directory rows"].startswith(f"{directory['entries']}\n")
    assert cards["cluster controllers"] == (f"{directory['cluster_controllers']}\n"
                                            f"{directory['stale_cluster_controllers']} stale, "
                                            "+1 in the last 24 h")
    assert cards["expired rows"] == f"{directory['expired']}\n+2 in the last 24 h"
    # traffic: the newest hour (H1) against the one before (H0): 7 messages against 10,
    # 110 bytes delivered against 840, 5 drops and refusals against none
    assert cards["messages"] == (f"{traffic['messages']}\nlast hour (09:00): 7, \u22123 "
                                 "(\u221230 %)")
    assert cards["bytes delivered"] == ("950 B\nlast hour (09:00): 110 B, \u2212730 B "
                                        "(\u221287 %)")
    assert cards["drops and refusals"] == ("5\n2 dropped, 3 refused; last hour (09:00): 5, +5")
    assert cards["drift findings"].startswith(f"{drift}\n")
    planned = len(fleet.PLANNED)
    # 4 of the 10 rows: more than [housekeeping] max_purge_share (0.1)
    assert cards["housekeeping would purge"] == (
        f"{planned}\nentries, 40.0 % of the directory (above max_purge_share), of 3 cluster "
        "controller(s), 2 stale")
    assert fleet.H1 == fleet.NOW // fleet.HOUR * fleet.HOUR - fleet.HOUR  # 09:00 UTC
    no_errors(browser)


def test_the_contents_link_to_every_section(report_page: Path,
                                            browser: webdriver.Chrome) -> None:
    open_page(browser, report_page, LAPTOP)
    links = browser.find_elements(By.CSS_SELECTOR, "nav a")
    targets = [(link.get_attribute("href") or "").rsplit("#", 1)[1] for link in links]
    sections = [s.get_attribute("id") for s in browser.find_elements(By.TAG_NAME, "section")]
    assert targets == sections
    assert sections[:3] == ["summary", "traffic", "security"]
    for link, target in zip(links, targets, strict=True):
        if target == "summary":
            continue
        link.click()
        # the section is at the top of the window, below the contents bar that stays there
        top, nav = browser.execute_script(
            "return [document.getElementById(arguments[0]).getBoundingClientRect().top,"
            " document.querySelector('nav').getBoundingClientRect().bottom]", target)
        assert nav - 1 <= top <= nav + 24 or browser.execute_script(
            "return window.innerHeight + window.scrollY >= "
            "document.scrollingElement.scrollHeight - 1"), (target, top, nav)


def test_the_header_names_the_runs_now(report_page: Path, browser: webdriver.Chrome) -> None:
    open_page(browser, report_page, LAPTOP)
    header = browser.find_element(By.TAG_NAME, "header").text
    assert "Judged at now = 2026-11-25 10:13:20 UTC (given with --now-ms)" in header
    assert re.search(r"Page made \d{4}-\d\d-\d\d \d\d:\d\d:\d\d UTC", header), header


def test_housekeeping_lists_the_controllers_it_would_purge(report_page: Path,
                                                           browser: webdriver.Chrome) -> None:
    open_page(browser, report_page, LAPTOP)
    table = browser.find_element(By.CSS_SELECTOR, "#housekeeping #table-housekeeping-controllers")
    assert table.find_element(By.TAG_NAME, "table").is_displayed()
    rows = [[td.text for td in tr.find_elements(By.TAG_NAME, "td")][:3]
            for tr in table.find_elements(By.CSS_SELECTOR, "tbody tr")]
    owner = {(e.gbid, e.participant_id): e.cluster_controller_id for e in fleet.DIRECTORY}
    expected = [[cc, "removeStale", str(n)] for cc, _, n in fleet.PLAN_REMOVE_STALE]
    expected += [[owner[key], "remove", "1"] for key in fleet.PLAN_REMOVE]
    # most entries first, then by name: cc-b (2), cc-a (1 expired entry), cc-c (1)
    assert rows == sorted(expected, key=lambda r: (-int(r[2]), r[0]))
    assert sum(int(r[2]) for r in rows) == len(fleet.PLANNED)


def test_tables_read_as_words_dates_and_sizes(report_page: Path, bounded_page: Path,
                                              browser: webdriver.Chrome) -> None:
    for page in (report_page, bounded_page):
        open_page(browser, page, LAPTOP)
        headers = browser.execute_script(
            "return [...document.querySelectorAll('th')].map(th => th.textContent)")
        assert headers
        assert [h for h in headers if "_" in h or re.fullmatch(r"[a-z]+", h)] == []
    open_page(browser, report_page, LAPTOP)
    per_interface = [[td.text for td in tr.find_elements(By.TAG_NAME, "td")]
                     for tr in browser.find_elements(By.CSS_SELECTOR,
                                                     "#table-per-interface tbody tr")]
    assert per_interface[0][:4] == ["d.vehicle", "test/Radio", "11", "630 B"]
    stale = [[td.text for td in tr.find_elements(By.TAG_NAME, "td")]
             for tr in browser.find_elements(By.CSS_SELECTOR,
                                             "#table-stale-controllers tbody tr")]
    # cc-c: last seen 50 h before now, stale since 26 h before
    assert stale[0] == ["cc-c", "1", "g2", "2026-11-23 08:13:20", "2026-11-24 08:13:20"]
    open_page(browser, bounded_page, LAPTOP)
    browser.execute_script("document.querySelectorAll('details').forEach(d => d.open = true)")
    first = [td.text for td in browser.find_elements(By.CSS_SELECTOR,
                                                      "#table-big-0 tbody tr:first-child td")]
    assert first[3:] == ["12.3 MB", "2026-11-25 10:13:20"]
    cards = [dd.text for dd in browser.find_elements(By.CSS_SELECTOR, "#summary dd")]
    assert cards[1] == "98.8 GB"


# ---------------------------------------------------------------------- both pages


def test_no_long_table_is_open(report_page: Path, bounded_page: Path,
                               browser: webdriver.Chrome) -> None:
    open_page(browser, bounded_page, LAPTOP)
    shown = browser.execute_script(
        "return [...document.querySelectorAll('table')].filter(t => t.checkVisibility())"
        ".map(t => t.tBodies[0].rows.length)")
    assert shown == []  # every table holds max_table_rows rows: all collapsed
    summaries = [s.text for s in browser.find_elements(By.CSS_SELECTOR, "details > summary")]
    assert (f"Table 0 the first {BOUNDS.max_table_rows} of {BIG_TOTAL:,} rows"
            in [" ".join(s.split()) for s in summaries])
    browser.find_element(By.CSS_SELECTOR, "#table-big-0 > summary").click()
    assert browser.find_element(By.CSS_SELECTOR, "#table-big-0 table").is_displayed()
    open_page(browser, report_page, LAPTOP)
    lengths = browser.execute_script(
        "return [...document.querySelectorAll('table')].filter(t => t.checkVisibility())"
        ".map(t => t.tBodies[0].rows.length)")
    assert lengths and max(lengths) <= OPEN_ROWS


def numbers_of(label: str) -> float | None:
    """The number a value-axis label shows ("2,500", "15k", "1.5M", "10 entries"), None for
    other text (times, names)."""
    match = re.fullmatch(r"([0-9][0-9,]*(?:\.[0-9]+)?)([kMG]?)(?: [a-z ]+)?", label)
    if match is None:
        return None
    scale = {"": 1, "k": 1e3, "M": 1e6, "G": 1e9}[match.group(2)]
    return float(match.group(1).replace(",", "")) * scale


def round_steps(value: float) -> bool:
    """1, 2 or 5 times a power of ten (at least 1: the figures are counts)."""
    exponent = len(str(int(value))) - 1
    return value >= 1 and value == int(value) and value / 10**exponent in (1, 2, 5)


@pytest.mark.parametrize("which", ["fleet", "bounds"])
def test_value_axes_tick_at_round_numbers(which: str, report_page: Path, bounded_page: Path,
                                          browser: webdriver.Chrome) -> None:
    open_page(browser, report_page if which == "fleet" else bounded_page, LAPTOP)
    axes = browser.execute_script(
        "return [...document.querySelectorAll('svg[data-chart] g.axes')].map("
        "g => [g.closest('svg').dataset.chart, [...g.querySelectorAll('text:not(.time)')]"
        ".map(t => t.textContent)])")
    checked = 0
    for chart, labels in axes:
        values = [v for v in map(numbers_of, labels) if v is not None]
        if not values:
            continue
        values.sort()
        steps = {b - a for a, b in itertools.pairwise(values)}
        assert len(steps) == 1, (chart, labels)
        step = steps.pop()
        assert round_steps(step), (chart, labels)
        assert values[0] == 0 and all(v % step == 0 for v in values), (chart, labels)
        checked += 1
    assert checked >= (5 if which == "fleet" else 3)


def test_the_other_series_does_not_set_the_scale(bounded_page: Path,
                                                 browser: webdriver.Chrome) -> None:
    open_page(browser, bounded_page, LAPTOP)
    traffic = browser.find_element(By.CSS_SELECTOR, 'svg[data-chart="traffic"]')
    top = float(traffic.get_attribute("data-scale-max") or 0)
    named = max(v for s in bounded_sections()[1].charts[0].spec["series"] for v in s["values"])
    assert named <= top < OTHER_MESSAGES / 10
    # the other interfaces, summed, are drawn in a panel of their own, on their own scale
    other = [float(c.get_attribute("data-value") or 0) for c in traffic.find_elements(
        By.CSS_SELECTOR, "g.marks.panel-other circle")]
    assert len(other) == BOUNDS.max_chart_bins and max(other) == OTHER_MESSAGES
    main = traffic.find_elements(By.CSS_SELECTOR, "g.marks.panel-main circle")
    assert max(float(c.get_attribute("data-value") or 0) for c in main) == named
    # a bar chart: the "other" bar is cut at the end of the scale, its value written
    bars = browser.find_element(By.CSS_SELECTOR, 'svg[data-chart="registrations"]')
    scale = float(bars.get_attribute("data-scale-max") or 0)
    assert scale < 1_000
    cut = bars.find_elements(By.CSS_SELECTOR, "g.marks rect[data-off-scale]")
    assert len(cut) == 3  # its three GBIDs
    assert "45,000" in [t.text for t in bars.find_elements(By.CSS_SELECTOR, "text.value")]
    no_errors(browser)


@pytest.mark.parametrize("size", [LAPTOP, PHONE], ids=["laptop", "phone"])
def test_legends_keep_domain_and_interface_apart(size: tuple[int, int], report_page: Path,
                                                 browser: webdriver.Chrome) -> None:
    open_page(browser, report_page, size)
    items = legends(browser)
    assert "d.vehicle \u00b7 test/Radio" in items
    joined = {f"{e.domain}/{e.interface_name}" for e in fleet.DIRECTORY}
    assert [item for item in items if any(j in item for j in joined)] == []


@pytest.mark.parametrize("size", [LAPTOP, PHONE], ids=["laptop", "phone"])
def test_the_page_fits_the_screen_with_nothing_cut_off(size: tuple[int, int], report_page: Path,
                                                       bounded_page: Path,
                                                       browser: webdriver.Chrome) -> None:
    name = "laptop" if size == LAPTOP else "phone"
    for page in (bounded_page, report_page):
        open_page(browser, page, size)
        overflow = browser.execute_script(
            "return [document.scrollingElement.scrollWidth, window.innerWidth]")
        assert overflow[0] <= overflow[1], f"{page}: wider than the {name}'s screen"
        # every text of every chart inside its chart, every chart inside the window
        outside: list[Any] = browser.execute_script("""
            const out = [];
            for (const svg of document.querySelectorAll('svg[data-chart]')) {
              const box = svg.getBoundingClientRect();
              if (box.right > window.innerWidth + 0.5) out.push([svg.dataset.chart, 'svg']);
              for (const t of svg.querySelectorAll('text')) {
                const r = t.getBoundingClientRect();
                if (r.left < box.left - 0.5 || r.right > box.right + 0.5 ||
                    r.top < box.top - 0.5 || r.bottom > box.bottom + 0.5)
                  out.push([svg.dataset.chart, t.textContent]);
              }
            }
            return out;""")
        assert outside == []
        no_errors(browser)
    # the fleet's page, whole, kept to look at
    whole_page_png(browser, ARTIFACTS / f"pipeline-report-{name}.png")
